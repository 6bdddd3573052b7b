#include "sidecar/api/http_router.h"

#include <array>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "baton/v1/leader_election.pb.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "sidecar/api/leadership_proto.h"

namespace baton {
namespace {

namespace http = boost::beast::http;
using Request = HttpRouter::Request;
using Response = HttpRouter::Response;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kText = "text/plain; charset=utf-8";
constexpr std::string_view kServer = "baton";

// The one mapping from absl status codes to HTTP statuses on this boundary.
http::status HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return http::status::ok;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return http::status::bad_request;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kAlreadyExists:
      return http::status::conflict;
    case absl::StatusCode::kNotFound:
      return http::status::not_found;
    case absl::StatusCode::kPermissionDenied:
      return http::status::forbidden;
    case absl::StatusCode::kUnauthenticated:
      return http::status::unauthorized;
    case absl::StatusCode::kResourceExhausted:
      return http::status::too_many_requests;
    case absl::StatusCode::kUnimplemented:
      return http::status::not_implemented;
    case absl::StatusCode::kDeadlineExceeded:
      return http::status::gateway_timeout;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kCancelled:
      return http::status::service_unavailable;
    default:
      return http::status::internal_server_error;
  }
}

Response MakeResponse(http::status status, std::string_view content_type, std::string body,
                      unsigned version) {
  Response res{status, version};
  res.set(http::field::server, kServer);
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

Response Text(http::status status, absl::string_view line, unsigned version) {
  return MakeResponse(status, kText, absl::StrCat(line, "\n"), version);
}

// "ok", or the reason a check failed, as a 200/503 probe answer.
Response Probe(const absl::Status& status, unsigned version) {
  if (status.ok()) return Text(http::status::ok, "ok", version);
  return Text(http::status::service_unavailable, status.message(), version);
}

std::string NotLeaderReason(const Leadership& l, MonoTime now) {
  if (!l.observed) return "not leader: the Lease has not been read yet";
  if (l.stepping_down) return "not leader: stepping down";
  if (l.holding && now >= l.leader_until) return "not leader: renew deadline passed";
  if (l.holder_identity.empty()) return "not leader: the Lease has no holder";
  return absl::StrCat("not leader: holder is ", l.holder_identity);
}

std::string_view PathOf(std::string_view target) {
  return target.substr(0, target.find_first_of("?#"));
}

}  // namespace

struct HttpRouter::Route {
  const char* path;
  http::verb method;  // GET routes also answer HEAD
  Response (HttpRouter::*handler)(const Request&) const;
  bool probe_or_metrics;  // also served by HttpRoutes::kProbesAndMetrics
};

HttpRouter::HttpRouter(HttpRoutes routes, absl::Duration leader_cache_window,
                       const ApiContext* context)
    : routes_(routes), leader_cache_window_(leader_cache_window), context_(context) {}

Response HttpRouter::Handle(const Request& request) const {
  static constexpr std::array kRoutes = {
      Route{"/", http::verb::get, &HttpRouter::GetLeaderElectorName, false},
      Route{"/leader", http::verb::get, &HttpRouter::GetLeader, false},
      Route{"/readyz/leader", http::verb::get, &HttpRouter::GetReadyzLeader, true},
      Route{"/healthz", http::verb::get, &HttpRouter::GetHealthz, true},
      Route{"/readyz", http::verb::get, &HttpRouter::GetReadyz, true},
      Route{"/metrics", http::verb::get, &HttpRouter::GetMetrics, true},
      Route{"/resign", http::verb::post, &HttpRouter::PostResign, false},
  };
  const std::string_view path = PathOf(request.target());
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (r.path == path && (routes_ == HttpRoutes::kApi || r.probe_or_metrics)) {
      route = &r;
      break;
    }
  }

  Response res;
  const bool head = request.method() == http::verb::head;
  if (route == nullptr) {
    res = Text(http::status::not_found, "not found", request.version());
  } else if (request.method() == route->method || (head && route->method == http::verb::get)) {
    res = (this->*route->handler)(request);
  } else {
    res = Text(http::status::method_not_allowed, "method not allowed", request.version());
    res.set(http::field::allow, route->method == http::verb::get ? "GET, HEAD" : "POST");
  }
  res.keep_alive(request.keep_alive());
  res.prepare_payload();
  // HEAD: the GET answer's headers, Content-Length included, without a body.
  if (head) res.body().clear();
  context_->metrics->ObserveHttpRequest(route ? route->path : "other",
                                        static_cast<int>(res.result_int()));
  return res;
}

Response HttpRouter::GetLeaderElectorName(const Request& request) const {
  boost::json::object body;
  body["name"] = context_->publisher->Current().leadership.holder_identity;
  return MakeResponse(http::status::ok, kJson, boost::json::serialize(body) + "\n",
                      request.version());
}

Response HttpRouter::GetLeader(const Request& request) const {
  return MakeResponse(http::status::ok, kJson, LeaderJson(context_->clock->Monotonic()),
                      request.version());
}

std::string HttpRouter::LeaderJson(MonoTime now) const {
  const LeadershipPublisher::Versioned current = context_->publisher->Current();
  {
    absl::MutexLock lock(&cache_mu_);
    if (cache_.version == current.version && cache_.from <= now && now < cache_.until) {
      return cache_.body;
    }
  }
  const MonoTime until = now + leader_cache_window_;
  v1::Leadership message;
  LeadershipToProto(current.leadership, until, &message);
  std::string body = ToJson(message) + "\n";
  absl::MutexLock lock(&cache_mu_);
  cache_ = CachedLeaderJson{current.version, now, until, body};
  return body;
}

Response HttpRouter::GetReadyzLeader(const Request& request) const {
  const Leadership l = context_->publisher->Current().leadership;
  const MonoTime now = context_->clock->Monotonic();
  if (l.IsLeader(now)) return Text(http::status::ok, "leader", request.version());
  return Text(http::status::service_unavailable, NotLeaderReason(l, now), request.version());
}

Response HttpRouter::GetHealthz(const Request& request) const {
  return Probe(CheckLiveness(*context_), request.version());
}

Response HttpRouter::GetReadyz(const Request& request) const {
  return Probe(CheckReadiness(*context_), request.version());
}

Response HttpRouter::GetMetrics(const Request& request) const {
  return MakeResponse(http::status::ok, Metrics::kContentType, context_->metrics->Render(),
                      request.version());
}

Response HttpRouter::PostResign(const Request& request) const {
  const unsigned version = request.version();
  if (!context_->hooks.resign) {
    return Text(http::status::not_implemented, "resign is not enabled", version);
  }
  v1::ResignResponse response;
  response.set_was_leader(
      context_->publisher->Current().leadership.IsLeader(context_->clock->Monotonic()));
  if (absl::Status status = context_->hooks.resign(); !status.ok()) {
    return Text(HttpStatusFor(status.code()), absl::StrCat("resign failed: ", status.message()),
                version);
  }
  LeadershipToProto(context_->publisher->Current().leadership, *context_->clock,
                    response.mutable_leadership());
  return MakeResponse(http::status::ok, kJson, ToJson(response) + "\n", version);
}

Response HttpRouter::Error(http::status status, absl::string_view reason, unsigned version) {
  Response res = Text(status, reason, version);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

}  // namespace baton

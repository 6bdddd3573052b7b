#include "sidecar/api/http_router.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
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
constexpr std::string_view kEventStream = "text/event-stream";
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

// The value of query parameter `name` in `target`, nullopt if absent;
// InvalidArgument if it is given twice. Values are taken literally, without
// percent-decoding: every value baton accepts is made of characters that need
// no escaping, so an escaped one fails validation instead of being guessed at.
absl::StatusOr<std::optional<std::string_view>> QueryParam(std::string_view target,
                                                           std::string_view name) {
  const size_t start = target.find('?');
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(start + 1);
  query = query.substr(0, query.find('#'));
  std::optional<std::string_view> value;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = param.find('=');
    if (param.substr(0, eq) != name) continue;
    if (value) return absl::InvalidArgumentError(std::string(name) + " is given more than once");
    value = eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1);
  }
  return value;
}

// A positive duration as absl (and Go) print them ("15s", "500ms", "1m30s"),
// given as query parameter `name`: nullopt when absent.
absl::StatusOr<std::optional<absl::Duration>> OptionalDuration(std::string_view target,
                                                               std::string_view name) {
  absl::StatusOr<std::optional<std::string_view>> text = QueryParam(target, name);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::nullopt;
  absl::Duration d;
  if (!absl::ParseDuration(absl::string_view((*text)->data(), (*text)->size()), &d) ||
      d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::string_view(name.data(), name.size()),
                     " must be a positive duration such as 5s or 500ms"));
  }
  return d;
}

// The reader a request names: ?client_id= and ?max_valid_for=, parsed;
// LocalApi validates it.
absl::StatusOr<Reader> ReaderOf(std::string_view target) {
  absl::StatusOr<std::optional<std::string_view>> id = QueryParam(target, "client_id");
  if (!id.ok()) return id.status();
  // Given but empty is a mistake, not a wish to be anonymous.
  if (id->has_value() && (*id)->empty()) return ValidateClientId("");
  absl::StatusOr<std::optional<absl::Duration>> bound = OptionalDuration(target, "max_valid_for");
  if (!bound.ok()) return bound.status();
  return Reader{std::string(id->value_or(std::string_view())), *bound};
}

// A fencing token as a query parameter: a non-negative decimal int32.
absl::StatusOr<int32_t> ParseFencingToken(std::optional<std::string_view> text) {
  if (!text) return absl::InvalidArgumentError("fencing_token is required");
  uint32_t token = 0;
  const char* begin = text->data();
  const char* end = begin + text->size();
  auto [parsed_to, error] = std::from_chars(begin, end, token);
  if (text->empty() || error != std::errc() || parsed_to != end ||
      token > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError("fencing_token must be a non-negative 32-bit integer");
  }
  return static_cast<int32_t>(token);
}

}  // namespace

struct HttpRouter::Route {
  const char* path;
  http::verb method;  // GET routes also answer HEAD
  Response (HttpRouter::*handler)(const Request&) const;
  bool probe_or_metrics;  // also served by HttpRoutes::kProbesAndMetrics
  // Instead of `handler`, for a route that answers with an event stream.
  Reply (HttpRouter::*stream_handler)(const Request&) const = nullptr;
};

HttpRouter::HttpRouter(HttpRoutes routes, absl::Duration leader_cache_window,
                       const ApiContext* context)
    : routes_(routes),
      leader_cache_window_(leader_cache_window),
      context_(context),
      api_(context) {}

HttpRouter::Reply HttpRouter::Handle(const Request& request) const {
  static constexpr std::array kRoutes = {
      Route{"/", http::verb::get, &HttpRouter::GetLeaderElectorName, false},
      Route{"/leader", http::verb::get, &HttpRouter::GetLeader, false},
      Route{"/leader/watch", http::verb::get, nullptr, false, &HttpRouter::GetLeaderWatch},
      Route{"/readyz/leader", http::verb::get, &HttpRouter::GetReadyzLeader, true},
      Route{"/healthz", http::verb::get, &HttpRouter::GetHealthz, true},
      Route{"/readyz", http::verb::get, &HttpRouter::GetReadyz, true},
      Route{"/metrics", http::verb::get, &HttpRouter::GetMetrics, true},
      Route{"/resign", http::verb::post, &HttpRouter::PostResign, false},
      Route{"/leader/ack", http::verb::post, &HttpRouter::PostLeaderAck, false},
  };
  const std::string_view path = PathOf(request.target());
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (r.path == path && (routes_ == HttpRoutes::kApi || r.probe_or_metrics)) {
      route = &r;
      break;
    }
  }

  Reply reply;
  Response& res = reply.response;
  const bool head = request.method() == http::verb::head;
  bool stream_head = false;
  if (route == nullptr) {
    res = Text(http::status::not_found, "not found", request.version());
  } else if (request.method() == route->method || (head && route->method == http::verb::get)) {
    if (route->stream_handler != nullptr) {
      reply = (this->*route->stream_handler)(request);
      stream_head = res.result() == http::status::ok;
    } else {
      res = (this->*route->handler)(request);
    }
  } else {
    res = Text(http::status::method_not_allowed, "method not allowed", request.version());
    res.set(http::field::allow, route->method == http::verb::get ? "GET, HEAD" : "POST");
  }
  if (!stream_head) {
    res.keep_alive(request.keep_alive());
    res.prepare_payload();
  }
  // HEAD: the GET answer's headers, Content-Length included, without a body.
  if (head) res.body().clear();
  if (!reply.stream) {
    context_->metrics->ObserveHttpRequest(route ? route->path : "other",
                                          static_cast<int>(res.result_int()));
  }
  return reply;
}

Response HttpRouter::GetLeaderElectorName(const Request& request) const {
  // Applications take "name is my own identity" to mean "I lead", so this is
  // a leader answer too: it names this sidecar only while it leads, and then
  // (through Answer) as a promise.
  const LeaderAnswer answer = *api_.Get(Reader{});
  const Leadership& l = answer.leadership();
  const bool names_self = l.holder_identity == l.identity;
  boost::json::object body;
  body["name"] = names_self && !l.IsLeader(answer.at()) ? "" : l.holder_identity;
  return MakeResponse(http::status::ok, kJson, boost::json::serialize(body) + "\n",
                      request.version());
}

Response HttpRouter::GetLeader(const Request& request) const {
  absl::StatusOr<Reader> reader = ReaderOf(request.target());
  absl::StatusOr<LeaderAnswer> answer = reader.ok() ? api_.Get(*reader) : reader.status();
  if (!answer.ok()) {
    return Text(http::status::bad_request, answer.status().message(), request.version());
  }
  return MakeResponse(http::status::ok, kJson, LeaderJson(*answer), request.version());
}

HttpRouter::Reply HttpRouter::GetLeaderWatch(const Request& request) const {
  const unsigned version = request.version();
  absl::StatusOr<Reader> reader = ReaderOf(request.target());
  if (reader.ok()) {
    if (absl::Status valid = LocalApi::Validate(*reader); !valid.ok()) reader = valid;
  }
  if (!reader.ok()) {
    return {Text(http::status::bad_request, reader.status().message(), version), std::nullopt};
  }
  absl::StatusOr<std::optional<absl::Duration>> heartbeat =
      OptionalDuration(request.target(), "heartbeat");
  if (!heartbeat.ok()) {
    return {Text(http::status::bad_request, heartbeat.status().message(), version), std::nullopt};
  }
  // The stream ends only with the connection (shutdown, or the client
  // leaving), so the head says so; HTTP/1.0 has no chunks and reads the
  // body until the connection closes.
  Reply reply{MakeResponse(http::status::ok, kEventStream, "", version), std::nullopt};
  reply.response.keep_alive(false);
  if (request.method() == http::verb::get) {
    reply.response.chunked(version >= 11);
    reply.stream = EventStream{*std::move(reader), *heartbeat};
  }
  return reply;
}

std::string HttpRouter::LeaderJson(const LeaderAnswer& answer) const {
  // A cached body is served only for the same snapshot and the same deadline,
  // so it tells exactly the promise the answer recorded; evaluated at the end
  // of its window, it says leader only if the answer does.
  const MonoTime now = answer.at();
  const MonoTime deadline = answer.leadership().leader_until;
  {
    absl::MutexLock lock(&cache_mu_);
    if (cache_.version == answer.version() && cache_.deadline == deadline && cache_.from <= now &&
        now < cache_.until) {
      return cache_.body;
    }
  }
  const MonoTime until = now + leader_cache_window_;
  std::string body = LeadershipJson(answer, until) + "\n";
  absl::MutexLock lock(&cache_mu_);
  cache_ = CachedLeaderJson{answer.version(), deadline, now, until, body};
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
  const absl::StatusOr<v1::ResignResponse> response = api_.Resign();
  if (absl::IsUnimplemented(response.status())) {
    return Text(http::status::not_implemented, response.status().message(), request.version());
  }
  if (!response.ok()) {
    return Text(HttpStatusFor(response.status().code()),
                absl::StrCat("resign failed: ", response.status().message()), request.version());
  }
  return MakeResponse(http::status::ok, kJson, ToJson(*response) + "\n", request.version());
}

Response HttpRouter::PostLeaderAck(const Request& request) const {
  const unsigned version = request.version();
  absl::StatusOr<std::optional<std::string_view>> client_id =
      QueryParam(request.target(), "client_id");
  if (!client_id.ok())
    return Text(http::status::bad_request, client_id.status().message(), version);
  absl::StatusOr<std::optional<std::string_view>> token_text =
      QueryParam(request.target(), "fencing_token");
  absl::StatusOr<int32_t> token =
      token_text.ok() ? ParseFencingToken(*token_text) : token_text.status();
  if (!token.ok()) return Text(http::status::bad_request, token.status().message(), version);
  Acknowledgement ack{client_id->value_or(std::string_view()), *token, std::nullopt};
  absl::StatusOr<std::optional<std::string_view>> up_to_text =
      QueryParam(request.target(), "valid_until_boottime");
  if (!up_to_text.ok()) {
    return Text(http::status::bad_request, up_to_text.status().message(), version);
  }
  if (up_to_text->has_value()) {
    absl::StatusOr<MonoTime> up_to = ParseDeadline(**up_to_text);
    if (!up_to.ok()) return Text(http::status::bad_request, up_to.status().message(), version);
    ack.up_to = *up_to;
  }
  const absl::StatusOr<v1::AcknowledgeStepDownResponse> response = api_.Acknowledge(ack);
  if (!response.ok()) {
    return Text(HttpStatusFor(response.status().code()), response.status().message(), version);
  }
  return MakeResponse(http::status::ok, kJson, ToJson(*response) + "\n", version);
}

Response HttpRouter::Error(http::status status, absl::string_view reason, unsigned version) {
  Response res = Text(status, reason, version);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

}  // namespace baton

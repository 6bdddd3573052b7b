#include "sidecar/kube/kube_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/beast/http/field.hpp"
#include "boost/beast/http/verb.hpp"
#include "boost/json/parse.hpp"
#include "sidecar/common/clock.h"
#include "sidecar/kube/string_views.h"

namespace baton::kube {
namespace {

namespace http = boost::beast::http;

http::verb MethodOf(ApiVerb verb) {
  switch (verb) {
    case ApiVerb::kCreate:
      return http::verb::post;
    case ApiVerb::kUpdate:
      return http::verb::put;
    case ApiVerb::kPatch:
      return http::verb::patch;
    case ApiVerb::kGet:
    case ApiVerb::kList:
    case ApiVerb::kWatch:
      return http::verb::get;
  }
  return http::verb::get;
}

std::string Describe(ApiVerb verb, absl::string_view path) {
  return absl::StrCat(ToAbsl(http::to_string(MethodOf(verb))), " ", path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(RestConfig config,
                                                               KubeClientOptions options) {
  HttpsClientOptions https;
  https.endpoint = config.endpoint;
  https.max_body_bytes = options.max_response_bytes;
  https.clock = options.clock;
  std::unique_ptr<ExecCredentialSource> exec;
  if (config.exec.has_value()) {
    exec = std::make_unique<ExecCredentialSource>(config, *options.clock);
    absl::StatusOr<ExecCredential> cred = exec->Current();
    if (!cred.ok()) return cred.status();
    https.endpoint.client_cert_pem = cred->client_cert_pem;
    https.endpoint.client_key_pem = cred->client_key_pem;
  }
  // Fails fast on a bad CA or client certificate; the pool creates its own.
  if (absl::StatusOr<std::unique_ptr<HttpsClient>> probe = HttpsClient::Create(https);
      !probe.ok()) {
    return probe.status();
  }
  if (config.request_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("request timeout must be positive");
  }
  auto client = std::unique_ptr<KubeClient>(
      new KubeClient(std::move(config), std::move(options), std::move(https), std::move(exec)));
  if (client->token_file_ != nullptr) {
    if (absl::StatusOr<std::string> token = client->token_file_->Current(); !token.ok()) {
      return token.status();
    }
  }
  return client;
}

KubeClient::KubeClient(RestConfig config, KubeClientOptions options, HttpsClientOptions https,
                       std::unique_ptr<ExecCredentialSource> exec)
    : config_(std::move(config)),
      options_(std::move(options)),
      exec_(std::move(exec)),
      https_options_(std::move(https)) {
  if (!config_.bearer_token_file.empty()) {
    token_file_ = std::make_unique<TokenFile>(config_.bearer_token_file, options_.clock);
  }
}

KubeClient::~KubeClient() = default;

void KubeClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  for (const auto& [conn, generation] : in_use_) conn->Cancel();
  idle_.clear();
}

std::unique_ptr<HttpsClient> KubeClient::Acquire() {
  std::unique_ptr<HttpsClient> conn;
  HttpsClientOptions https;
  int generation = 0;
  {
    absl::MutexLock lock(&mu_);
    generation = tls_generation_;
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    } else {
      https = https_options_;
    }
  }
  if (conn == nullptr) {
    // Create, or RefreshExecCredential, validated these options already;
    // only allocation can differ.
    conn = *HttpsClient::Create(std::move(https));
  }
  absl::MutexLock lock(&mu_);
  if (cancelled_) conn->Cancel();
  in_use_.emplace_back(conn.get(), generation);
  return conn;
}

void KubeClient::Release(std::unique_ptr<HttpsClient> conn, int dials_before) {
  dials_.fetch_add(conn->dial_count() - dials_before);
  absl::MutexLock lock(&mu_);
  const auto it = std::find_if(in_use_.begin(), in_use_.end(),
                               [&](const auto& entry) { return entry.first == conn.get(); });
  const bool current = it->second == tls_generation_;
  in_use_.erase(it);
  if (!cancelled_ && current && static_cast<int>(idle_.size()) < options_.max_idle_connections) {
    idle_.push_back(std::move(conn));
  }
}

absl::Status KubeClient::RefreshExecCredential(std::string& token) {
  absl::StatusOr<ExecCredential> cred = exec_->Current();
  if (!cred.ok()) return cred.status();
  token = cred->token;
  HttpsClientOptions https;
  {
    absl::MutexLock lock(&mu_);
    if (cred->client_cert_pem == https_options_.endpoint.client_cert_pem &&
        cred->client_key_pem == https_options_.endpoint.client_key_pem) {
      return absl::OkStatus();
    }
    https = https_options_;
  }
  https.endpoint.client_cert_pem = cred->client_cert_pem;
  https.endpoint.client_key_pem = cred->client_key_pem;
  if (absl::StatusOr<std::unique_ptr<HttpsClient>> probe = HttpsClient::Create(https);
      !probe.ok()) {
    exec_->Invalidate();
    return absl::Status(probe.status().code(),
                        absl::StrCat("exec plugin \"", config_.exec->command,
                                     "\": its client certificate: ", probe.status().message()));
  }
  absl::MutexLock lock(&mu_);
  https_options_ = std::move(https);
  ++tls_generation_;
  idle_.clear();
  return absl::OkStatus();
}

void KubeClient::OnAnswer(int http_code) {
  if (exec_ != nullptr && http_code == 401) exec_->Invalidate();
}

absl::StatusOr<HttpRequest> KubeClient::NewRequest(ApiVerb verb, absl::string_view path,
                                                   std::string body) {
  HttpRequest req(MethodOf(verb), absl::StrCat(config_.base_path, path), 11);
  req.set(http::field::user_agent, config_.user_agent);
  req.set(http::field::accept, "application/json");
  std::string token = config_.bearer_token;
  if (exec_ != nullptr) {
    if (absl::Status s = RefreshExecCredential(token); !s.ok()) return s;
  } else if (token_file_ != nullptr) {
    absl::StatusOr<std::string> current = token_file_->Current();
    if (!current.ok()) return current.status();
    token = *std::move(current);
  }
  if (!token.empty()) req.set(http::field::authorization, absl::StrCat("Bearer ", token));
  if (!body.empty()) {
    // A patch is a JSON merge patch (RFC 7386), the simplest of the three
    // the API server takes.
    req.set(http::field::content_type,
            verb == ApiVerb::kPatch ? "application/merge-patch+json" : "application/json");
    req.body() = std::move(body);
  }
  return req;
}

void KubeClient::Observe(ApiVerb verb, int http_code, MonoTime start) const {
  if (!options_.observer) return;
  const absl::string_view name = ApiVerbName(verb);
  options_.observer(ToStd(name), http_code, options_.clock->Monotonic() - start);
}

absl::StatusOr<HttpResponse> KubeClient::Send(ApiVerb verb, absl::string_view path,
                                              std::string body) {
  const MonoTime start = options_.clock->Monotonic();
  const Deadline deadline = options_.clock->Monotonic() + config_.request_timeout;
  absl::StatusOr<HttpRequest> req = NewRequest(verb, path, std::move(body));
  if (!req.ok()) return req.status();
  std::unique_ptr<HttpsClient> conn = Acquire();
  const int dials_before = conn->dial_count();
  absl::StatusOr<HttpResponse> response = conn->RoundTrip(*req, deadline);
  Release(std::move(conn), dials_before);
  Observe(verb, response.ok() ? static_cast<int>(response->result_int()) : 0, start);
  if (response.ok()) OnAnswer(static_cast<int>(response->result_int()));
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat(Describe(verb, path), ": ", response.status().message()));
  }
  return response;
}

absl::StatusOr<boost::json::value> KubeClient::Call(ApiVerb verb, absl::string_view path,
                                                    std::string body) {
  absl::StatusOr<HttpResponse> response = Send(verb, path, std::move(body));
  if (!response.ok()) return response.status();
  const int code = static_cast<int>(response->result_int());
  if (code < 200 || code >= 300) {
    return StatusFromResponse(verb, Describe(verb, path), code, response->body(),
                              ToAbsl((*response)[http::field::retry_after]));
  }
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(response->body(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat(Describe(verb, path), ": malformed JSON in response: ", ec.message()));
  }
  return value;
}

absl::Status KubeClient::Watch(absl::string_view path, absl::Duration server_timeout,
                               absl::FunctionRef<void()> on_open,
                               absl::FunctionRef<absl::Status(absl::string_view)> on_data) {
  const MonoTime start = options_.clock->Monotonic();
  absl::StatusOr<HttpRequest> req = NewRequest(ApiVerb::kWatch, path, "");
  if (!req.ok()) return req.status();
  std::unique_ptr<HttpsClient> conn = Acquire();
  const int dials_before = conn->dial_count();
  bool opened = false;
  absl::StatusOr<HttpResponse> response = conn->Stream(
      *req, options_.clock->Monotonic() + config_.request_timeout,
      options_.clock->Monotonic() + server_timeout + config_.request_timeout,
      [&](const HttpResponse&) {
        opened = true;
        Observe(ApiVerb::kWatch, 200, start);
        on_open();
      },
      on_data);
  Release(std::move(conn), dials_before);
  if (!opened)
    Observe(ApiVerb::kWatch, response.ok() ? static_cast<int>(response->result_int()) : 0, start);
  if (response.ok()) OnAnswer(static_cast<int>(response->result_int()));
  if (!response.ok()) {
    return absl::Status(response.status().code(), absl::StrCat(Describe(ApiVerb::kWatch, path),
                                                               ": ", response.status().message()));
  }
  return StatusFromResponse(ApiVerb::kWatch, Describe(ApiVerb::kWatch, path),
                            static_cast<int>(response->result_int()), response->body(),
                            ToAbsl((*response)[http::field::retry_after]));
}

}  // namespace baton::kube

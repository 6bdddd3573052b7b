// KubeClient: authenticated JSON requests to one Kubernetes API server.
//
// Adds to HttpsClient what every API call needs: the bearer token (re-read
// from its file as it rotates), client certificate or exec plugin's
// credential (fetched again when it expires or is refused with 401; a new
// client certificate from the plugin replaces the pooled connections),
// Accept/Content-Type,
// the User-Agent, the per-request deadline from RestConfig, the error table
// (api_errors.h), and a request observer for metrics. Keeps a small pool of
// keep-alive connections so concurrent callers never wait on each other's
// I/O and no lock is held across it.
//
// Thread-safe. Calls block for at most RestConfig::request_timeout (a watch:
// its server timeout plus that). Never logs or returns the token.
#ifndef BATON_SIDECAR_KUBE_KUBE_CLIENT_H_
#define BATON_SIDECAR_KUBE_KUBE_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/json/value.hpp"
#include "sidecar/common/clock.h"
#include "sidecar/kube/api_errors.h"
#include "sidecar/kube/exec_credential.h"
#include "sidecar/kube/https_client.h"
#include "sidecar/kube/rest_config.h"
#include "sidecar/kube/token_file.h"

namespace baton::kube {

// Called once per HTTP request after it finishes (a watch: when its response
// head arrives or it fails) with the Kubernetes verb, the HTTP status (0 for
// a transport failure: no answer) and the latency. Runs on the calling
// thread with no lock held; must be thread-safe and quick.
using RequestObserver =
    std::function<void(std::string_view verb, int http_code, absl::Duration latency)>;

struct KubeClientOptions {
  RequestObserver observer;
  // Times the observer's latencies and ages the bearer token.
  const Clock* clock = SystemClock();
  // Largest response body accepted (watch: largest single event).
  size_t max_response_bytes = 4 << 20;
  // Idle keep-alive connections kept for reuse.
  int max_idle_connections = 2;
};

class KubeClient {
 public:
  // Checks the config (CA, client certificate, token file readable; an exec
  // plugin is run once for its first credential). InvalidArgument /
  // FailedPrecondition otherwise. Does not dial.
  static absl::StatusOr<std::unique_ptr<KubeClient>> Create(RestConfig config,
                                                            KubeClientOptions options = {});

  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;
  ~KubeClient();

  // Sends `body` (JSON; empty for none) to `path` (absolute API path with
  // query, e.g. "/apis/coordination.k8s.io/v1/namespaces/ns/leases/x") with
  // the method of `verb` (GET for get/list/watch, POST create, PUT update,
  // PATCH patch: a JSON merge patch)
  // and returns the answer whatever its HTTP status. Errors are transport
  // failures only. Most callers want Call().
  absl::StatusOr<HttpResponse> Send(ApiVerb verb, absl::string_view path, std::string body = "");

  // As Send, then: a 2xx answer's body parsed as JSON; any other answer
  // mapped through the error table; a malformed body is Internal.
  absl::StatusOr<boost::json::value> Call(ApiVerb verb, absl::string_view path,
                                          std::string body = "");

  // Opens a watch stream at `path` (which must ask for timeoutSeconds =
  // `server_timeout`). Once the server answers 200, calls `on_open`, then
  // passes body bytes to `on_data` as they arrive. Returns OK when the server
  // ends the stream; the mapped error for a non-200 answer; `on_data`'s error;
  // DeadlineExceeded if the stream outlives server_timeout + request_timeout;
  // Cancelled after Cancel().
  absl::Status Watch(absl::string_view path, absl::Duration server_timeout,
                     absl::FunctionRef<void()> on_open,
                     absl::FunctionRef<absl::Status(absl::string_view)> on_data);

  // Aborts every request in progress and fails all later ones with
  // Cancelled. Thread-safe, non-blocking.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

  const RestConfig& config() const { return config_; }
  const KubeClientOptions& options() const { return options_; }
  // Connections dialled so far (for tests of keep-alive reuse).
  int connections_dialled() const { return dials_.load(); }

 private:
  KubeClient(RestConfig config, KubeClientOptions options, HttpsClientOptions https,
             std::unique_ptr<ExecCredentialSource> exec);

  // A connection from the pool, or a new one.
  std::unique_ptr<HttpsClient> Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  void Release(std::unique_ptr<HttpsClient> conn, int dials_before) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<HttpRequest> NewRequest(ApiVerb verb, absl::string_view path, std::string body)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The exec plugin's current credential; replaces the pool's client
  // certificate when the plugin's has changed. Token in `token`.
  absl::Status RefreshExecCredential(std::string& token) ABSL_LOCKS_EXCLUDED(mu_);
  // After an answer: a 401 makes the exec plugin run again next time.
  void OnAnswer(int http_code);
  void Observe(ApiVerb verb, int http_code, MonoTime start) const;

  const RestConfig config_;
  const KubeClientOptions options_;
  std::unique_ptr<TokenFile> token_file_;       // set when config_.bearer_token_file is
  std::unique_ptr<ExecCredentialSource> exec_;  // set when config_.exec is
  std::atomic<int> dials_{0};

  absl::Mutex mu_;
  // Options of new connections; the client certificate changes when an exec
  // plugin's does, and bumps tls_generation_ so older connections are not
  // pooled again.
  HttpsClientOptions https_options_ ABSL_GUARDED_BY(mu_);
  int tls_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<HttpsClient>> idle_ ABSL_GUARDED_BY(mu_);
  // The tls_generation_ each connection in use was made in.
  std::vector<std::pair<HttpsClient*, int>> in_use_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_KUBE_CLIENT_H_

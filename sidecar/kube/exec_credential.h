// Exec credential plugins (client.authentication.k8s.io v1 and v1beta1), as
// kubectl runs them for EKS, GKE, AKS and OIDC logins: a command named by
// the kubeconfig prints an ExecCredential whose status carries a bearer
// token or a client certificate, and when it expires.
//
//   ParseExecCredential   the plugin's output, checked (pure)
//   ExecInfo              the KUBERNETES_EXEC_INFO the plugin is given (pure)
//   RunExecPlugin         runs the command once and returns its stdout
//   ExecCredentialSource  the current credential: cached, and the plugin run
//                         again once the credential's expirationTimestamp has
//                         passed (or after the server refused it)
//
// The plugin inherits baton's stderr (its messages reach the user) and, when
// it may be interactive and stdin is a terminal, stdin; otherwise stdin is
// /dev/null. Tokens are never logged or put in a status.
#ifndef BATON_SIDECAR_KUBE_EXEC_CREDENTIAL_H_
#define BATON_SIDECAR_KUBE_EXEC_CREDENTIAL_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/kube/rest_config.h"

namespace baton::kube {

// What a plugin printed, checked.
struct ExecCredential {
  // Bearer token; empty when the plugin gave a client certificate instead.
  std::string token;
  // PEM client certificate and key, both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // status.expirationTimestamp; none: valid as long as the process runs.
  std::optional<absl::Time> expires;
};

// Parses `json`, an ExecCredential of `api_version`. InvalidArgument, naming
// the field, for another apiVersion or kind, no status, neither a token nor
// a certificate and key, a certificate without its key, or an
// expirationTimestamp that is not RFC 3339.
absl::StatusOr<ExecCredential> ParseExecCredential(absl::string_view json,
                                                   absl::string_view api_version);

// The JSON given to the plugin in $KUBERNETES_EXEC_INFO: an ExecCredential
// of the plugin's apiVersion with spec.interactive and, when
// provideClusterInfo is set, spec.cluster (server, tls-server-name,
// certificate-authority-data) from `config`.
std::string ExecInfo(const ExecPlugin& plugin, const RestConfig& config, bool interactive);

// Runs config.exec once, as kubectl does: the command with its args, the
// environment of this process plus the plugin's env and
// KUBERNETES_EXEC_INFO. Returns its stdout once it exits 0. Errors:
// FailedPrecondition (cannot start: with the install hint; exits non-zero;
// Always-interactive without a terminal), DeadlineExceeded past `timeout`
// (the plugin is killed), ResourceExhausted for more than 1 MiB of output.
// Blocks for at most `timeout`: the deadline is read on `clock`, the waits
// run on CLOCK_MONOTONIC (poll), which a wall-clock step does not move.
absl::StatusOr<std::string> RunExecPlugin(const RestConfig& config, absl::Duration timeout,
                                          const Clock& clock);

// The credential of one kubeconfig user's plugin, for KubeClient.
// Thread-safe; Current() blocks while the plugin runs (one run at a time,
// whoever asks meanwhile waits for it).
class ExecCredentialSource {
 public:
  // Runs the plugin of a config (RunExecPlugin in production; a fake in
  // tests) and returns what it printed.
  using Runner = std::function<absl::StatusOr<std::string>(const RestConfig&)>;

  struct Options {
    // How long one run of the plugin may take (a browser login may be slow).
    absl::Duration timeout = absl::Minutes(2);
    // Defaults to RunExecPlugin with `timeout` and the source's clock.
    Runner runner;
  };

  // `config.exec` must be set. `clock` (its wall time, which an
  // expirationTimestamp is written in, and the plugin's timeout) must
  // outlive this.
  ExecCredentialSource(RestConfig config, const Clock& clock, Options options);
  ExecCredentialSource(RestConfig config, const Clock& clock)
      : ExecCredentialSource(std::move(config), clock, Options()) {}

  ExecCredentialSource(const ExecCredentialSource&) = delete;
  ExecCredentialSource& operator=(const ExecCredentialSource&) = delete;

  // The cached credential while it has not expired, else the plugin's new
  // one. Errors as for RunExecPlugin and ParseExecCredential, naming the
  // command; the previous credential is not used once it has expired.
  absl::StatusOr<ExecCredential> Current() ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets the cached credential, so the next Current() runs the plugin:
  // for when the API server answered 401 to it (revoked before it expired).
  void Invalidate() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::StatusOr<ExecCredential> Fetch() const;

  const RestConfig config_;
  const Clock& clock_;
  const Options options_;

  absl::Mutex mu_;
  std::optional<ExecCredential> cached_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_EXEC_CREDENTIAL_H_

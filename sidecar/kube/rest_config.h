// RestConfig: where the API server is and how to authenticate to it, as a
// plain value; and the in-cluster loader that builds one from the Pod's
// ServiceAccount mount.
//
// A RestConfig always carries the cluster CA: baton never talks to an API
// server whose certificate it has not verified. Load one with
// LoadInClusterConfig() or LoadKubeconfig() (kubeconfig.h); both fail fast
// with InvalidArgument / FailedPrecondition naming what is wrong.
#ifndef BATON_SIDECAR_KUBE_REST_CONFIG_H_
#define BATON_SIDECAR_KUBE_REST_CONFIG_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sidecar/kube/tls_endpoint.h"

namespace baton::kube {

// An exec credential plugin from a kubeconfig user (`user.exec`): a command
// that prints a client.authentication.k8s.io ExecCredential with a token or
// a client certificate. Run by ExecCredentialSource (exec_credential.h).
struct ExecPlugin {
  // "client.authentication.k8s.io/v1" or ".../v1beta1"; the ExecCredential
  // printed must carry the same.
  std::string api_version;
  // The command (looked up in $PATH unless it contains a '/'; a relative
  // path with a '/' is already resolved against the kubeconfig's directory),
  // its arguments and extra environment variables, in order.
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  // When the plugin may talk to the user on the terminal. v1 kubeconfigs
  // must say; v1beta1 defaults to kIfAvailable.
  enum class Interactive { kNever, kIfAvailable, kAlways };
  Interactive interactive = Interactive::kIfAvailable;
  // Whether KUBERNETES_EXEC_INFO carries the cluster (server, CA).
  bool provide_cluster_info = false;
  // Shown when the command cannot be started (e.g. how to install it).
  std::string install_hint;
};

struct RestConfig {
  // The API server: where it is and how its certificate (and ours) is
  // checked. `endpoint.ca_pem` is required.
  TlsEndpoint endpoint;
  // Path prefix from the server URL, usually empty, never with a trailing
  // slash.
  std::string base_path;

  // Bearer token. When `bearer_token_file` is set, the token is read from it
  // and re-read whenever it changes (bound ServiceAccount tokens rotate) and
  // `bearer_token` is ignored, as client-go does.
  std::string bearer_token;
  std::string bearer_token_file;

  // Credentials from a plugin instead: its token (and client certificate, if
  // it prints one) are used and the plugin is run again when they expire.
  // Only `baton leases` accepts a kubeconfig that sets this.
  std::optional<ExecPlugin> exec;

  // The namespace the configuration points at: the kubeconfig context's, or
  // the Pod's own in-cluster. Empty if unknown. The sidecar's fallback for
  // --lease-namespace.
  std::string namespace_name;

  // Deadline for each API request (dial, TLS, send, full response). A watch
  // uses it for the response head and adds it to its timeoutSeconds.
  absl::Duration request_timeout = absl::Seconds(10);

  // Sent with every request; identifies baton in API-server logs and metrics.
  std::string user_agent = DefaultUserAgent();

  // `baton/<version> (linux/<arch>)`.
  static std::string DefaultUserAgent();

  // "https://host:port/base_path", host bracketed if IPv6. For messages.
  std::string ServerUrl() const;
};

// The ServiceAccount mount every Pod gets.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// Builds the in-cluster config: server from $KUBERNETES_SERVICE_HOST and
// $KUBERNETES_SERVICE_PORT, CA from `<dir>/ca.crt`, token from `<dir>/token`
// (re-read as it rotates), namespace from `<dir>/namespace` (optional).
// FailedPrecondition when not in a cluster or the mount is incomplete. Reads
// the environment and the files once; blocking file I/O.
absl::StatusOr<RestConfig> LoadInClusterConfig(
    absl::string_view service_account_dir = kServiceAccountDir);

// Fills the endpoint's host and port, and base_path, of `config` from an
// `https://` URL.
// InvalidArgument for other schemes (plain http is refused), user info,
// queries, fragments or a bad port.
absl::Status SetServerUrl(absl::string_view url, RestConfig& config);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_REST_CONFIG_H_

// Kubeconfig loading: turns a kubeconfig file (as written by kubectl or the
// project's control-plane tooling) into a RestConfig.
//
// Supported, per the selected context:
//   cluster: server (https only), certificate-authority, certificate-authority-data,
//            tls-server-name
//   user:    token, tokenFile (re-read as it rotates), client-certificate[-data]
//            + client-key[-data]
//   context: cluster, user, namespace (exposed as RestConfig::namespace_name)
// Refused with InvalidArgument naming the field: insecure-skip-tls-verify:
// true, a cluster without a CA, proxy-url, exec plugins, auth-provider,
// username/password, impersonation (as, as-groups, ...), and any other user
// field (an authentication method baton does not implement). Relative file
// paths are resolved against the kubeconfig's directory, as kubectl does.
//
// Blocking file I/O; thread-safe.
#ifndef BATON_SIDECAR_KUBE_KUBECONFIG_H_
#define BATON_SIDECAR_KUBE_KUBECONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/kube/rest_config.h"

namespace baton::kube {

// Reads the kubeconfig at `path` and builds the config of `context` (empty:
// the file's current-context). NotFound/FailedPrecondition if the file (or a
// file it names) cannot be read; InvalidArgument if it is malformed or uses
// something unsupported.
absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path, absl::string_view context = "");

// As LoadKubeconfig, from kubeconfig text; relative paths in it are resolved
// against `base_dir`. `source` names the text in messages.
absl::StatusOr<RestConfig> ParseKubeconfig(absl::string_view yaml, absl::string_view base_dir,
                                           absl::string_view context = "",
                                           absl::string_view source = "kubeconfig");

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_KUBECONFIG_H_

// Kubeconfig loading: turns one kubeconfig file, or several merged the way
// kubectl merges $KUBECONFIG, into a RestConfig.
//
// Supported, per the selected context:
//   cluster: server (https only), certificate-authority, certificate-authority-data,
//            tls-server-name
//   user:    token, tokenFile (re-read as it rotates), client-certificate[-data]
//            + client-key[-data]; exec (a credential plugin, only when
//            KubeconfigOptions::allow_exec_plugins: see ExecPlugin)
//   context: cluster, user, namespace (exposed as RestConfig::namespace_name)
// Refused with InvalidArgument naming the field: insecure-skip-tls-verify:
// true, a cluster without a CA, proxy-url, exec plugins where not allowed,
// auth-provider, username/password, impersonation (as, as-groups, ...), and
// any other user field (an authentication method baton does not implement).
// Relative file paths (and an exec command with a '/') are resolved against
// the directory of the file that defines them, as kubectl does.
//
// Merging several files (kubectl's rules): the first file that sets
// current-context wins; a cluster, user or context is taken whole from the
// first file that defines its name; later definitions of that name are
// ignored.
//
// Blocking file I/O; thread-safe.
#ifndef BATON_SIDECAR_KUBE_KUBECONFIG_H_
#define BATON_SIDECAR_KUBE_KUBECONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/kube/rest_config.h"

namespace baton::kube {

struct KubeconfigOptions {
  // The context to use; empty: the current-context.
  std::string context;
  // Whether a user's `exec` credential plugin is accepted. The sidecar
  // refuses them (it runs in a Pod, with its ServiceAccount token); the
  // operator's `baton leases` accepts them.
  bool allow_exec_plugins = false;
};

// One kubeconfig's text, the directory its relative paths resolve against,
// and the name it goes by in messages (usually its path).
struct KubeconfigText {
  std::string yaml;
  std::string base_dir;
  std::string source;
};

// Reads the kubeconfig at `path` and builds the config of options.context.
// NotFound/FailedPrecondition if the file (or a file it names) cannot be
// read; InvalidArgument if it is malformed or uses something unsupported.
absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path,
                                          const KubeconfigOptions& options = {});

// Reads every file of `paths` that exists, merges them (see above) and
// builds the config of options.context. Files that do not exist are skipped,
// as kubectl skips them in $KUBECONFIG; NotFound if none exists. Other
// errors as for LoadKubeconfig.
absl::StatusOr<RestConfig> LoadMergedKubeconfig(const std::vector<std::string>& paths,
                                                const KubeconfigOptions& options = {});

// As LoadMergedKubeconfig, from texts already read, in precedence order.
absl::StatusOr<RestConfig> ParseKubeconfigs(const std::vector<KubeconfigText>& texts,
                                            const KubeconfigOptions& options = {});

// The kubeconfig files kubectl would read, in precedence order: `flag`
// (--kubeconfig) alone when set; else the entries of `env_kubeconfig`
// ($KUBECONFIG, ':'-separated; empty entries and repeats dropped); else
// `home`/.kube/config. Empty if none of them is given. Pure.
std::vector<std::string> KubeconfigPaths(absl::string_view flag, absl::string_view env_kubeconfig,
                                         absl::string_view home);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_KUBECONFIG_H_

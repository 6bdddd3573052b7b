// Kubeconfig text (YAML) through ParseKubeconfigs, the loader behind
// --kubeconfig and `baton leases`' $KUBECONFIG: once alone as the sidecar
// reads it (exec plugins refused), once with exec plugins allowed as `baton
// leases` reads it, and once merged after a second document that defines
// nothing, which must not change the answer. Relative file references
// resolve against a directory that does not exist. Whatever parses names an
// https server host and carries a CA, as the loader promises; an exec plugin
// only where allowed, always with a command.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "sidecar/kube/kubeconfig.h"

namespace {

using baton::kube::KubeconfigOptions;
using baton::kube::KubeconfigText;
using baton::kube::ParseKubeconfigs;
using baton::kube::RestConfig;

void CheckConfig(const absl::StatusOr<RestConfig>& config, bool exec_allowed) {
  if (!config.ok()) {
    FUZZ_CHECK(!config.status().message().empty());
    return;
  }
  FUZZ_CHECK(!config->endpoint.host.empty());
  FUZZ_CHECK(!config->endpoint.ca_pem.empty());
  FUZZ_CHECK(config->base_path.empty() || config->base_path.back() != '/');
  FUZZ_CHECK(exec_allowed || !config->exec.has_value());
  FUZZ_CHECK(!config->exec.has_value() || !config->exec->command.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const KubeconfigText text{std::string(reinterpret_cast<const char*>(data), size),
                            "/nonexistent/baton-fuzz", "fuzz input"};
  const absl::StatusOr<RestConfig> sidecar = ParseKubeconfigs({text});
  CheckConfig(sidecar, false);
  KubeconfigOptions tool;
  tool.allow_exec_plugins = true;
  const absl::StatusOr<RestConfig> leases = ParseKubeconfigs({text}, tool);
  CheckConfig(leases, true);
  // Refusing exec plugins is the only difference allowing them makes.
  FUZZ_CHECK(!sidecar.ok() || leases.ok());
  const absl::StatusOr<RestConfig> merged =
      ParseKubeconfigs({{"apiVersion: v1\nkind: Config\n", "/nonexistent", "empty"}, text}, tool);
  CheckConfig(merged, true);
  FUZZ_CHECK(merged.ok() == leases.ok());
  return 0;
}

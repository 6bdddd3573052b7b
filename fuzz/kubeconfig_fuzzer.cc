// Kubeconfig text (YAML) through ParseKubeconfig, the loader behind
// --kubeconfig and `baton leases --kubeconfig`. Relative file references
// resolve against a directory that does not exist. Whatever parses names an
// https server host and carries a CA, as the loader promises.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "sidecar/kube/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view yaml(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<baton::kube::RestConfig> config =
      baton::kube::ParseKubeconfig(yaml, "/nonexistent/baton-fuzz", "", "fuzz input");
  if (!config.ok()) {
    FUZZ_CHECK(!config.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(!config->host.empty());
  FUZZ_CHECK(!config->ca_pem.empty());
  FUZZ_CHECK(config->base_path.empty() || config->base_path.back() != '/');
  return 0;
}

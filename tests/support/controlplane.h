// ControlPlane: the real kube-apiserver + etcd that integration tests run
// against, as seen from a C++ test.
//
// CTest starts one control plane per run (the `controlplane` fixture, see
// tests/CMakeLists.txt) and passes its state directory in
// $BATON_CONTROLPLANE_DIR; tests registered with baton_controlplane_test()
// require that fixture. Tests share the cluster, so each test works in its own
// namespace (UniqueNamespace).
//
// Thread-compatible: use from the test's main thread.
#ifndef BATON_TESTS_SUPPORT_CONTROLPLANE_H_
#define BATON_TESTS_SUPPORT_CONTROLPLANE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace baton::testing {

// Result of running a command to completion.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) with argv, feeding `input` on stdin, and
// waits for it. Never throws; a failure to start gives exit_code 127.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = "");

class ControlPlane {
 public:
  // The control plane named by $BATON_CONTROLPLANE_DIR. Aborts the test
  // binary with a clear message if it is unset or not ready.
  static ControlPlane& Get();

  const std::string& Dir() const { return dir_; }
  // DIR/kubeconfig: cluster-admin (system:masters) client certificate.
  std::string AdminKubeconfig() const { return dir_ + "/kubeconfig"; }
  // https://127.0.0.1:PORT
  std::string Server() const;

  // Runs kubectl as the admin; returns stdout. Non-OK (with stderr in the
  // message) when kubectl exits non-zero.
  absl::StatusOr<std::string> Kubectl(const std::vector<std::string>& args,
                                      const std::string& input = "") const;
  // Like Kubectl but returns the whole result, for tests that expect failure.
  CommandResult KubectlResult(const std::vector<std::string>& args,
                              const std::string& input = "") const;

  // Creates (if missing) the namespace and ServiceAccount and writes a
  // kubeconfig that authenticates with a bound token for it; returns its path.
  absl::StatusOr<std::string> TokenKubeconfig(const std::string& ns, const std::string& sa) const;
  // A bound token for the ServiceAccount (created if missing).
  absl::StatusOr<std::string> Token(const std::string& ns, const std::string& sa) const;

  // Restarts kube-apiserver on the same address; returns once it is ready.
  absl::Status RestartApiServer() const;

  // Creates a namespace named `<prefix>-<n>` that no other test uses.
  std::string UniqueNamespace(const std::string& prefix) const;

  // The repository's scripts/controlplane and the matching kubectl (DIR/bin).
  std::string Script() const { return root_ + "/scripts/controlplane"; }
  std::string KubectlPath() const;
  // The baton binary of this build.
  std::string BatonBinary() const;

 private:
  ControlPlane(std::string dir, std::string root) : dir_(std::move(dir)), root_(std::move(root)) {}
  absl::StatusOr<std::string> RunScript(const std::vector<std::string>& args) const;

  std::string dir_;
  std::string root_;
};

}  // namespace baton::testing

#endif  // BATON_TESTS_SUPPORT_CONTROLPLANE_H_

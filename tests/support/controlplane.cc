#include "tests/support/controlplane.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace baton::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A temporary file removed on destruction.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/baton-test-XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
  }
  ~TempFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input) {
  // Files rather than pipes: no deadlock however much the child writes.
  TempFile in, out, err;
  if (write(in.fd(), input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    return {127, "", "writing stdin failed"};
  }
  lseek(in.fd(), 0, SEEK_SET);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in.fd(), 0);
    dup2(out.fd(), 1);
    dup2(err.fd(), 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  CommandResult result;
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return {127, "", "fork/wait failed"};
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = ReadAll(out.path());
  result.err = ReadAll(err.path());
  return result;
}

ControlPlane& ControlPlane::Get() {
  static ControlPlane* const cp = [] {
    const char* dir = std::getenv("BATON_CONTROLPLANE_DIR");
    if (dir == nullptr || access((std::string(dir) + "/ready").c_str(), R_OK) != 0) {
      std::fprintf(stderr,
                   "no ready control plane: run this test through ctest (the controlplane "
                   "fixture starts one and sets BATON_CONTROLPLANE_DIR)\n");
      std::abort();
    }
    return new ControlPlane(dir, BATON_SOURCE_DIR);
  }();
  return *cp;
}

std::string ControlPlane::Server() const {
  return std::string(absl::StripAsciiWhitespace(ReadAll(dir_ + "/server")));
}

std::string ControlPlane::KubectlPath() const { return dir_ + "/bin/kubectl"; }

std::string ControlPlane::BatonBinary() const { return std::string(BATON_BIN_DIR) + "/baton"; }

CommandResult ControlPlane::KubectlResult(const std::vector<std::string>& args,
                                          const std::string& input) const {
  std::vector<std::string> argv = {KubectlPath(), "--kubeconfig", AdminKubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, input);
}

absl::StatusOr<std::string> ControlPlane::Kubectl(const std::vector<std::string>& args,
                                                  const std::string& input) const {
  CommandResult r = KubectlResult(args, input);
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("kubectl ", absl::StrJoin(args, " "), " exited ", r.exit_code, ": ", r.err));
  }
  return r.out;
}

absl::StatusOr<std::string> ControlPlane::RunScript(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {Script()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("scripts/controlplane ", absl::StrJoin(args, " "),
                                            " exited ", r.exit_code, ": ", r.err));
  }
  return r.out;
}

absl::StatusOr<std::string> ControlPlane::TokenKubeconfig(const std::string& ns,
                                                          const std::string& sa) const {
  std::string out = absl::StrCat(dir_, "/", ns, "-", sa, ".kubeconfig");
  absl::StatusOr<std::string> r = RunScript({"token-kubeconfig", dir_, ns, sa, out});
  if (!r.ok()) return r.status();
  return out;
}

absl::StatusOr<std::string> ControlPlane::Token(const std::string& ns,
                                                const std::string& sa) const {
  absl::StatusOr<std::string> r = RunScript({"token", dir_, ns, sa});
  if (!r.ok()) return r.status();
  return std::string(absl::StripAsciiWhitespace(*r));
}

absl::Status ControlPlane::RestartApiServer() const {
  return RunScript({"restart-apiserver", dir_}).status();
}

std::string ControlPlane::UniqueNamespace(const std::string& prefix) const {
  static std::atomic<int> counter{0};
  std::string ns = absl::StrCat(prefix, "-", getpid(), "-", counter++);
  absl::StatusOr<std::string> r = Kubectl({"create", "namespace", ns});
  if (!r.ok()) {
    std::fprintf(stderr, "creating namespace %s: %s\n", ns.c_str(), r.status().ToString().c_str());
    std::abort();
  }
  return ns;
}

}  // namespace baton::testing

#include "sidecar/kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "boost/json/object.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "sidecar/common/c_strings.h"
#include "sidecar/common/errno_text.h"
#include "sidecar/kube/string_views.h"

extern char** environ;

namespace baton::kube {
namespace {

constexpr size_t kMaxPluginOutputBytes = 1 << 20;

std::string StringField(const boost::json::object& obj, absl::string_view key) {
  const boost::json::value* v = obj.if_contains(ToBoost(key));
  return v != nullptr && v->is_string() ? std::string(ToAbsl(v->get_string())) : std::string();
}

bool Interactive(const ExecPlugin& plugin) {
  return plugin.interactive != ExecPlugin::Interactive::kNever && isatty(STDIN_FILENO) == 1;
}

// This process's environment with the plugin's variables set over it.
std::vector<std::string> PluginEnvironment(const ExecPlugin& plugin, const std::string& exec_info) {
  std::vector<std::pair<std::string, std::string>> set = plugin.env;
  set.emplace_back("KUBERNETES_EXEC_INFO", exec_info);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view var(*e);
    const absl::string_view name = var.substr(0, var.find('='));
    if (std::none_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; })) {
      env.emplace_back(var);
    }
  }
  for (const auto& [name, value] : set) env.push_back(absl::StrCat(name, "=", value));
  return env;
}

// What poll() should wait to reach `deadline` on `clock`, in milliseconds
// (rounded up). poll() times out on CLOCK_MONOTONIC, which no wall-clock step
// moves; a fake clock does not move it either, so a test's plugin runs in
// real time.
int PollMillis(MonoTime deadline, const Clock& clock) {
  const int64_t ms =
      absl::ToInt64Milliseconds(absl::Ceil(deadline - clock.Monotonic(), absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

// Waits for `pid` until `deadline`; kills it past that. Its exit status, or
// -1 if it had to be killed. Sleeps on the process's pidfd, which becomes
// readable when it exits (on kernels before 5.3, in 5 ms polls).
int Reap(pid_t pid, MonoTime deadline, const Clock& clock) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (clock.Monotonic() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    // poll() ignores a negative fd: then it only sleeps.
    pollfd p{pidfd, POLLIN, 0};
    poll(&p, 1,
         pidfd >= 0 ? PollMillis(deadline, clock) : std::min(PollMillis(deadline, clock), 5));
  }
  if (pidfd >= 0) close(pidfd);
  return status;
}

}  // namespace

absl::StatusOr<ExecCredential> ParseExecCredential(absl::string_view json,
                                                   absl::string_view api_version) {
  auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("the plugin's ExecCredential ", why));
  };
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(ToBoost(json), ec);
  if (ec || !doc.is_object()) return bad("is not a JSON object");
  const boost::json::object& obj = doc.get_object();
  if (const std::string v = StringField(obj, "apiVersion"); v != api_version) {
    return bad(absl::StrCat("has apiVersion \"", v, "\", the kubeconfig asks for ", api_version));
  }
  if (StringField(obj, "kind") != "ExecCredential") return bad("is not of kind ExecCredential");
  const boost::json::value* status = obj.if_contains("status");
  if (status == nullptr || !status->is_object()) return bad("has no status");
  const boost::json::object& st = status->get_object();
  ExecCredential cred;
  cred.token = StringField(st, "token");
  cred.client_cert_pem = StringField(st, "clientCertificateData");
  cred.client_key_pem = StringField(st, "clientKeyData");
  if (cred.client_cert_pem.empty() != cred.client_key_pem.empty()) {
    return bad("needs both status.clientCertificateData and status.clientKeyData");
  }
  if (cred.token.empty() && cred.client_cert_pem.empty()) {
    return bad("has neither status.token nor status.clientCertificateData");
  }
  if (const std::string expiry = StringField(st, "expirationTimestamp"); !expiry.empty()) {
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, expiry, &t, &err)) {
      return bad(absl::StrCat("has an expirationTimestamp that is not RFC 3339: \"", expiry, "\""));
    }
    cred.expires = t;
  }
  return cred;
}

std::string ExecInfo(const ExecPlugin& plugin, const RestConfig& config, bool interactive) {
  boost::json::object spec{{"interactive", interactive}};
  if (plugin.provide_cluster_info) {
    boost::json::object cluster{
        {"server", config.ServerUrl()},
        {"certificate-authority-data", absl::Base64Escape(config.endpoint.ca_pem)}};
    if (!config.endpoint.tls_server_name.empty()) {
      cluster["tls-server-name"] = config.endpoint.tls_server_name;
    }
    spec["cluster"] = std::move(cluster);
  }
  const boost::json::object info{
      {"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}};
  return boost::json::serialize(info);
}

absl::StatusOr<std::string> RunExecPlugin(const RestConfig& config, absl::Duration timeout,
                                          const Clock& clock) {
  const ExecPlugin& plugin = *config.exec;
  const std::string name = absl::StrCat("exec plugin \"", plugin.command, "\"");
  const bool interactive = Interactive(plugin);
  if (plugin.interactive == ExecPlugin::Interactive::kAlways && !interactive) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, " needs a terminal (interactiveMode: Always) and stdin is not one"));
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(name, ": pipe: ", ErrnoText(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (!interactive) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  std::vector<std::string> argv_storage = {plugin.command};
  argv_storage.insert(argv_storage.end(), plugin.args.begin(), plugin.args.end());
  std::vector<std::string> env_storage =
      PluginEnvironment(plugin, ExecInfo(plugin, config, interactive));
  std::vector<char*> argv = CStrings(argv_storage);
  std::vector<char*> envp = CStrings(env_storage);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, plugin.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    return absl::FailedPreconditionError(
        absl::StrCat(name, " cannot be run: ", ErrnoText(spawned),
                     plugin.install_hint.empty() ? "" : absl::StrCat("\n", plugin.install_hint)));
  }

  const MonoTime deadline = clock.Monotonic() + timeout;
  std::string out;
  absl::Status read_status;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, PollMillis(deadline, clock));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      read_status = absl::DeadlineExceededError(
          absl::StrCat(name, " did not finish within ", absl::FormatDuration(timeout)));
      break;
    }
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxPluginOutputBytes) {
      read_status = absl::ResourceExhaustedError(
          absl::StrCat(name, " printed more than ", kMaxPluginOutputBytes, " bytes"));
      break;
    }
  }
  close(fds[0]);
  const int status = Reap(pid, read_status.ok() ? deadline : clock.Monotonic(), clock);
  if (!read_status.ok()) return read_status;
  if (status == -1) {
    return absl::DeadlineExceededError(
        absl::StrCat(name, " did not exit within ", absl::FormatDuration(timeout)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, WIFEXITED(status) ? absl::StrCat(" exited with code ", WEXITSTATUS(status))
                                : absl::StrCat(" was killed by signal ", WTERMSIG(status))));
  }
  return out;
}

ExecCredentialSource::ExecCredentialSource(RestConfig config, const Clock& clock, Options options)
    : config_(std::move(config)), clock_(clock), options_([&] {
        if (!options.runner) {
          options.runner = [timeout = options.timeout, &clock](const RestConfig& c) {
            return RunExecPlugin(c, timeout, clock);
          };
        }
        return std::move(options);
      }()) {}

absl::StatusOr<ExecCredential> ExecCredentialSource::Fetch() const {
  absl::StatusOr<std::string> out = options_.runner(config_);
  if (!out.ok()) return out.status();
  absl::StatusOr<ExecCredential> cred = ParseExecCredential(*out, config_.exec->api_version);
  if (!cred.ok()) {
    return absl::Status(cred.status().code(), absl::StrCat("exec plugin \"", config_.exec->command,
                                                           "\": ", cred.status().message()));
  }
  return cred;
}

absl::StatusOr<ExecCredential> ExecCredentialSource::Current() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* running) { return !*running; }, &running_));
    if (cached_.has_value() &&
        (!cached_->expires.has_value() || clock_.Wall() < *cached_->expires)) {
      return *cached_;
    }
    cached_.reset();
    running_ = true;
  }
  // The plugin runs without the lock held; others wait for running_.
  absl::StatusOr<ExecCredential> cred = Fetch();
  absl::MutexLock lock(&mu_);
  running_ = false;
  if (cred.ok()) cached_ = *cred;
  return cred;
}

void ExecCredentialSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  cached_.reset();
}

}  // namespace baton::kube

#include "sidecar/run/supervisor.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "sidecar/common/errno_text.h"

extern char** environ;

namespace baton::run {
namespace {

int64_t Nanos(MonoTime t) { return absl::ToInt64Nanoseconds(t.SinceOrigin()); }

// The watchdog's whole life, in the forked copy of a multi-threaded process:
// async-signal-safe calls only (no allocation, no locks, no logging).
[[noreturn]] void WatchdogMain(int fd, pid_t pgid, int64_t kill_at) {
  for (;;) {
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    const int64_t now = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    if (now >= kill_at) {
      kill(-pgid, SIGKILL);
      _exit(0);
    }
    const int64_t wait_ms = (kill_at - now + 999999) / 1000000;
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms > 1000 ? 1000 : static_cast<int>(wait_ms)) <= 0) continue;
    int64_t values[64];
    const ssize_t n = read(fd, values, sizeof(values));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      kill(-pgid, SIGKILL);
      _exit(1);
    }
    if (n == 0) {  // baton is gone
      kill(-pgid, SIGKILL);
      _exit(0);
    }
    for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(int64_t)); ++i) {
      if (values[i] == 0) _exit(0);  // the child was reaped: stand down
      kill_at = values[i];
    }
  }
}

// The environment of the child: baton's, with `extra` added or replacing
// entries of the same name.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& x : extra) {
      const std::string_view name = std::string_view(x).substr(0, x.find('=') + 1);
      if (entry.starts_with(name)) replaced = true;
    }
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ProcessSupervisor::~ProcessSupervisor() {
  if (pid_ < 0) return;
  kill(-pid_, SIGKILL);
  pollfd p = {pidfd_, POLLIN, 0};
  poll(&p, 1, -1);
  Reap();
}

absl::StatusOr<pid_t> ProcessSupervisor::Start(const ChildSpec& spec) {
  if (pid_ >= 0) return absl::FailedPreconditionError("a child is already running");
  if (spec.argv.empty()) return absl::InvalidArgumentError("no command to run");
  // Everything the forked child touches is built before fork: between fork
  // and exec only async-signal-safe calls are allowed in a threaded process.
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = ChildEnvironment(spec.extra_env);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", ErrnoText(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // baton died before the prctl
    // baton blocks its shutdown signals and ignores SIGPIPE; exec keeps
    // both, which the command must not inherit.
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    // After fork only async-signal-safe calls are allowed, and the child has
    // one thread: sigprocmask, not pthread_sigmask.
    sigprocmask(SIG_SETMASK, &none, nullptr);  // NOLINT(concurrency-mt-unsafe)
    execvpe(argv[0], argv.data(), envp.data());
    _exit(errno == EACCES ? 126 : 127);
  }
  // Also from this side, so that the group exists before any Signal().
  setpgid(pid, pid);
  pid_ = pid;
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd_ < 0) {
    const int err = errno;
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid_ = -1;
    return absl::InternalError(absl::StrCat("pidfd_open: ", ErrnoText(err)));
  }
  if (absl::Status s = StartWatchdog(pid, spec.kill_by); !s.ok()) {
    kill(-pid, SIGKILL);
    pollfd p = {pidfd_, POLLIN, 0};
    poll(&p, 1, -1);
    Reap();
    return s;
  }
  return pid;
}

absl::Status ProcessSupervisor::StartWatchdog(pid_t pgid, MonoTime kill_by) {
  // A socket pair rather than a pipe: one record per deadline
  // (SOCK_SEQPACKET), and send() can refuse without SIGPIPE once the
  // watchdog has exited.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", ErrnoText(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", ErrnoText(errno)));
  }
  if (pid == 0) {
    // Keep only its end (as fd 3) and stdio: baton's end, baton's
    // sockets and everything else close, so that baton's death is seen as
    // end-of-file and no port stays bound by the watchdog.
    if (fds[0] != 3) dup2(fds[0], 3);
    syscall(SYS_close_range, 4, ~0U, 0);
    // The watchdog must outlive baton: no PDEATHSIG, and it stays out of the
    // child's process group.
    WatchdogMain(3, pgid, Nanos(kill_by));
  }
  close(fds[0]);
  watchdog_pid_ = pid;
  watchdog_fd_ = fds[1];
  return absl::OkStatus();
}

void ProcessSupervisor::Signal(int sig) {
  if (pid_ >= 0) kill(-pid_, sig);
}

void ProcessSupervisor::ExtendDeadline(MonoTime kill_by) {
  if (watchdog_fd_ < 0) return;
  const int64_t value = Nanos(kill_by);
  // A full socket means the watchdog is not reading; it keeps the older,
  // earlier deadline, which is the safe one.
  (void)!send(watchdog_fd_, &value, sizeof(value), MSG_DONTWAIT | MSG_NOSIGNAL);
}

std::optional<ExitStatus> ProcessSupervisor::Reap() {
  if (pid_ < 0) return std::nullopt;
  siginfo_t info = {};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0) {
    return std::nullopt;
  }
  // The exited child still reserves its process group id until it is
  // reaped, so this kills only what it left behind.
  kill(-pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  close(pidfd_);
  pidfd_ = -1;
  pid_ = -1;
  StopWatchdog();
  return ExitStatus::FromWaitStatus(status);
}

void ProcessSupervisor::StopWatchdog() {
  if (watchdog_pid_ < 0) return;
  const int64_t stand_down = 0;
  // Fails harmlessly if the watchdog has already killed the group and exited.
  (void)!send(watchdog_fd_, &stand_down, sizeof(stand_down), MSG_DONTWAIT | MSG_NOSIGNAL);
  close(watchdog_fd_);
  waitpid(watchdog_pid_, nullptr, 0);
  watchdog_fd_ = -1;
  watchdog_pid_ = -1;
}

}  // namespace baton::run

#include "sidecar/run/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "sidecar/common/c_strings.h"
#include "sidecar/common/errno_text.h"

extern char** environ;

namespace baton::run {
namespace {

int64_t Nanos(MonoTime t) { return absl::ToInt64Nanoseconds(t.SinceOrigin()); }

// Sets `timer` (a CLOCK_BOOTTIME timerfd) to go off at `at` nanoseconds.
bool ArmAt(int timer, int64_t at) {
  itimerspec spec = {};
  spec.it_value.tv_sec = static_cast<time_t>(at / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(at % 1000000000);  // NOLINT(google-runtime-int)
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  return timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr) == 0;
}

// The watchdog's whole life, in the forked copy of a multi-threaded process:
// async-signal-safe calls only (no allocation, no locks, no logging). It
// sleeps on `timer`, a timerfd on CLOCK_BOOTTIME set for the deadline
// itself, so that neither a suspend nor a wall-clock step lets the child
// run past it.
[[noreturn]] void WatchdogMain(int fd, int timer, pid_t pgid, int64_t kill_at) {
  for (;;) {
    if (!ArmAt(timer, kill_at)) {  // it could not keep the deadline
      kill(-pgid, SIGKILL);
      _exit(1);
    }
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    const int64_t now = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    if (now >= kill_at) {
      kill(-pgid, SIGKILL);
      _exit(0);
    }
    pollfd p[2] = {{fd, POLLIN, 0}, {timer, POLLIN, 0}};
    if (poll(p, 2, -1) <= 0) continue;
    if (p[1].revents & POLLIN) {
      uint64_t expirations;
      (void)!read(timer, &expirations, sizeof(expirations));
    }
    if (p[0].revents == 0) continue;
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
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);
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
  // Made here, where a failure can still be reported, not in the watchdog.
  const int timer = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
  if (timer < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("timerfd_create: ", ErrnoText(err)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    close(timer);
    return absl::InternalError(absl::StrCat("fork: ", ErrnoText(err)));
  }
  if (pid == 0) {
    // Keep only its end of the socket (as fd 3), its timer (as fd 4) and
    // stdio: baton's end, baton's sockets and everything else close, so
    // that baton's death is seen as end-of-file and no port stays bound by
    // the watchdog.
    int moved_timer = timer;
    if (moved_timer == 3) moved_timer = fcntl(timer, F_DUPFD, 5);
    if (fds[0] != 3) dup2(fds[0], 3);
    if (moved_timer != 4) dup2(moved_timer, 4);
    syscall(SYS_close_range, 5, ~0U, 0);
    // The watchdog must outlive baton: no PDEATHSIG, and it stays out of the
    // child's process group.
    WatchdogMain(3, 4, pgid, Nanos(kill_by));
  }
  close(fds[0]);
  close(timer);
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

#include "sidecar/main/run_command.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "sidecar/common/errno_text.h"
#include "sidecar/common/log.h"
#include "sidecar/main/daemon.h"
#include "sidecar/run/supervisor.h"

namespace baton {
namespace {

// Sets `timer`, a CLOCK_BOOTTIME timerfd, to go off at `at` (the daemon's
// clock is CLOCK_BOOTTIME), or disarms it for an infinite `at`. The loop
// sleeps on it rather than on a poll() timeout, which counts
// CLOCK_MONOTONIC and so would stop during a suspend.
bool ArmAt(int timer, MonoTime at) {
  itimerspec spec = {};  // zero: disarmed
  if (at != run::MonoInfiniteFuture()) {
    // Zero would disarm it; the origin (boot) is long past anyway.
    spec.it_value = at.SinceOrigin() > absl::ZeroDuration() ? absl::ToTimespec(at.SinceOrigin())
                                                            : timespec{0, 1};
  }
  return timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, nullptr) == 0;
}

// A file descriptor closed on destruction.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  const int fd_;
};

}  // namespace

int RunCommand(const SidecarConfig& config, kube::RestConfig rest, run::Runner::Options options,
               const sigset_t& shutdown_signals) {
  const Fd signals(signalfd(-1, &shutdown_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  const Fd changes(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  const Fd timer(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK));
  if (signals.get() < 0 || changes.get() < 0 || timer.get() < 0) {
    spdlog::error("event=start_failed error={} next=exit", LogValue(ErrnoText(errno)));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<Daemon>> started = Daemon::Start(config, std::move(rest));
  if (!started.ok()) {
    spdlog::error("event=start_failed error={} next=exit", LogValue(started.status().ToString()));
    return 1;
  }
  Daemon& daemon = **started;
  // Every change of the snapshot wakes the loop below; the callback runs on
  // the election loop's thread and only bumps a counter.
  const int subscription = daemon.publisher()->Subscribe([fd = changes.get()](const auto&) {
    const uint64_t one = 1;
    (void)!write(fd, &one, sizeof(one));
  });
  options.acknowledge = [&daemon](const Acknowledgement& ack) { return daemon.Acknowledge(ack); };
  run::ProcessSupervisor supervisor;
  run::Runner runner(std::move(options), daemon.clock(), daemon.publisher(), &supervisor);

  bool timer_failed = false;
  for (;;) {
    const MonoTime wake = runner.Poll();
    if (runner.exit_code().has_value()) break;
    pollfd fds[4] = {{signals.get(), POLLIN, 0},
                     {changes.get(), POLLIN, 0},
                     {timer.get(), POLLIN, 0},
                     {supervisor.exit_fd(), POLLIN, 0}};
    if (!ArmAt(timer.get(), wake) && !timer_failed) {
      timer_failed = true;
      spdlog::error("event=timer_failed error={} next=\"stop the command, release, exit\"",
                    LogValue(ErrnoText(errno)));
      runner.Shutdown();
    }
    // Without a timer, look again every 100 ms until the command is gone.
    const int n = poll(fds, supervisor.exit_fd() >= 0 ? 4 : 3, timer_failed ? 100 : -1);
    if (n < 0 && errno != EINTR) {
      spdlog::error("event=poll_failed error={} next=\"stop the command, release, exit\"",
                    LogValue(ErrnoText(errno)));
      runner.Shutdown();
      continue;
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      if (read(signals.get(), &info, sizeof(info)) == sizeof(info)) {
        spdlog::info(
            "event=shutdown signal={} next=\"stop the command, then release once every promise "
            "is acknowledged or has lapsed\"",
            run::SignalName(static_cast<int>(info.ssi_signo)));
        runner.Shutdown();
      }
    }
    if (fds[1].revents & POLLIN) {
      uint64_t count;
      (void)!read(changes.get(), &count, sizeof(count));
    }
    if (fds[2].revents & POLLIN) {
      uint64_t expirations;
      (void)!read(timer.get(), &expirations, sizeof(expirations));
    }
    if (supervisor.exit_fd() >= 0 && (fds[3].revents & POLLIN)) {
      if (std::optional<run::ExitStatus> status = supervisor.Reap()) runner.OnChildExit(*status);
    }
  }
  daemon.publisher()->Unsubscribe(subscription);
  daemon.Stop(config.shutdown_grace);
  spdlog::info("event=exited code={}", *runner.exit_code());
  return *runner.exit_code();
}

}  // namespace baton

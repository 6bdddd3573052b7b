#include "sidecar/main/run_command.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
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

// Milliseconds until `at`, rounded up, for poll(); -1 for never.
int PollTimeout(MonoTime at, MonoTime now) {
  if (at == run::MonoInfiniteFuture()) return -1;
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(at - now, absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
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
  if (signals.get() < 0 || changes.get() < 0) {
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

  for (;;) {
    const MonoTime wake = runner.Poll();
    if (runner.exit_code().has_value()) break;
    pollfd fds[3] = {
        {signals.get(), POLLIN, 0}, {changes.get(), POLLIN, 0}, {supervisor.exit_fd(), POLLIN, 0}};
    const int n = poll(fds, supervisor.exit_fd() >= 0 ? 3 : 2,
                       PollTimeout(wake, daemon.clock()->Monotonic()));
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
    if (supervisor.exit_fd() >= 0 && (fds[2].revents & POLLIN)) {
      if (std::optional<run::ExitStatus> status = supervisor.Reap()) runner.OnChildExit(*status);
    }
  }
  daemon.publisher()->Unsubscribe(subscription);
  daemon.Stop(config.shutdown_grace);
  spdlog::info("event=exited code={}", *runner.exit_code());
  return *runner.exit_code();
}

}  // namespace baton

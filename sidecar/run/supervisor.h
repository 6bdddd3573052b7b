// Supervisor: starts, signals and kills the one child process of `baton run`.
//
// Supervisor is the interface the Runner (runner.h) drives, so that its rules
// can be tested with a fake; ProcessSupervisor is the real one. A child runs
// in a process group of its own, so a stop reaches everything it started.
//
// ProcessSupervisor, what keeps a child from outliving its leadership when
// baton cannot act:
//   * PR_SET_PDEATHSIG=SIGKILL: the kernel kills the child if baton dies
//     (the child is forked from baton's main thread, which lives as long as
//     the process; the signal reaches the child only, not its descendants);
//   * a watchdog, a small forked process of its own beside the child, kills
//     the child's whole process group when baton dies (its socket from
//     baton reaches end-of-file) or when the deadline baton last gave it
//     (ExtendDeadline) passes: this covers a baton that is paused (SIGSTOP,
//     starved) while its child keeps running. It sleeps on a CLOCK_BOOTTIME
//     timerfd set for the deadline itself, so it kills on time even when
//     the machine was suspended meanwhile.
// Neither covers a SIGKILL of the watchdog itself together with a pause of
// baton, or descendants that leave the process group (setsid); docs/run.md.
//
// Thread-compatible: one thread (baton's main thread) makes every call.
#ifndef BATON_SIDECAR_RUN_SUPERVISOR_H_
#define BATON_SIDECAR_RUN_SUPERVISOR_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sidecar/common/clock.h"
#include "sidecar/run/run_policy.h"

namespace baton::run {

// What a child is started with.
struct ChildSpec {
  // argv[0] is looked up in $PATH.
  std::vector<std::string> argv;
  // NAME=VALUE entries added to (or replacing those of) baton's environment.
  std::vector<std::string> extra_env;
  // The watchdog kills the child's group at this instant unless extended.
  MonoTime kill_by;
};

class Supervisor {
 public:
  virtual ~Supervisor() = default;
  // Starts the child and returns its pid. At most one child at a time: only
  // after the previous one was reaped. An error if the process could not be
  // created; a command that cannot be executed starts and exits with 127
  // (126 if not executable).
  virtual absl::StatusOr<pid_t> Start(const ChildSpec& spec) = 0;
  // Sends `sig` to the child's process group. No-op without a child.
  virtual void Signal(int sig) = 0;
  // Moves the watchdog's deadline (see ChildSpec::kill_by). No-op without a child.
  virtual void ExtendDeadline(MonoTime kill_by) = 0;
};

class ProcessSupervisor final : public Supervisor {
 public:
  ProcessSupervisor() = default;
  // Kills and reaps a child still running.
  ~ProcessSupervisor() override;
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  absl::StatusOr<pid_t> Start(const ChildSpec& spec) override;
  void Signal(int sig) override;
  void ExtendDeadline(MonoTime kill_by) override;

  // A descriptor that becomes readable (poll POLLIN) once the child has
  // exited; -1 without a child.
  int exit_fd() const { return pidfd_; }
  // Once exit_fd() is readable: SIGKILLs whatever is left in the child's
  // process group, reaps the child, stands the watchdog down and returns how
  // the child ended. nullopt if the child has not exited (or there is none).
  std::optional<ExitStatus> Reap();
  // The running child's pid; -1 without a child.
  pid_t pid() const { return pid_; }

 private:
  // Forks the watchdog for the process group `pgid`.
  absl::Status StartWatchdog(pid_t pgid, MonoTime kill_by);
  void StopWatchdog();

  pid_t pid_ = -1;
  int pidfd_ = -1;
  pid_t watchdog_pid_ = -1;
  int watchdog_fd_ = -1;  // baton's end of the socket pair to the watchdog
};

}  // namespace baton::run

#endif  // BATON_SIDECAR_RUN_SUPERVISOR_H_

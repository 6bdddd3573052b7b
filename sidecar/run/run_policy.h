// The rules of `baton run` that are plain values and arithmetic: the flags
// --stop-signal, --stop-grace and --restart as typed values, when a child
// must be stopped so that it is gone before its leadership can end, whether
// a child that exited on its own runs again, and which exit code baton then
// returns. docs/run.md explains them to the operator.
#ifndef BATON_SIDECAR_RUN_RUN_POLICY_H_
#define BATON_SIDECAR_RUN_RUN_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"

namespace baton::run {

// --restart: what happens when the child exits on its own while baton leads.
enum class RestartPolicy {
  kAlways,     // run it again, whatever its exit status
  kOnFailure,  // run it again unless it exited 0
  kNever,      // do not run it again
};

// "always", "on-failure", "never"; InvalidArgument naming --restart otherwise.
absl::StatusOr<RestartPolicy> ParseRestartPolicy(absl::string_view value);

// A signal name with or without "SIG" ("SIGTERM", "INT", "sigquit") or a
// number in [1, 64]; InvalidArgument naming --stop-signal otherwise.
absl::StatusOr<int> ParseStopSignal(absl::string_view value);

// "SIGTERM" for the signals ParseStopSignal knows by name, else the number.
std::string SignalName(int sig);

// How a child ended: exited with a code, or was killed by a signal.
struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // terminating signal when signaled

  static ExitStatus Exited(int code);
  static ExitStatus Killed(int signal);
  // From a waitpid() status word.
  static ExitStatus FromWaitStatus(int status);
  bool Success() const { return !signaled && code == 0; }
  // "exit_code=3" or "signal=SIGKILL", for logs.
  std::string ToString() const;
};

// The exit code of `baton run` after its child ended on its own and was not
// run again: the child's code, or 128 + the signal that killed it (the
// shell's convention).
int ExitCodeFor(const ExitStatus& status);

// Whether a child that ended on its own with `status` runs again.
bool ShouldRestart(RestartPolicy policy, const ExitStatus& status);

// How long before its validity ends baton's own SIGKILL of the child's
// process group comes: room for the kernel to end the group and for baton to
// wake up late on a busy machine.
inline constexpr absl::Duration kKillMargin = absl::Milliseconds(200);
// How long before its validity ends the watchdog (child_process.h) kills the
// group if baton itself cannot (it is paused or starved): after baton's own
// kill, still before the validity ends.
inline constexpr absl::Duration kWatchdogMargin = absl::Milliseconds(100);

// When a child whose leadership is guaranteed until `valid_until` must get
// the stop signal, renews failing: --stop-grace plus kKillMargin earlier.
MonoTime StopSignalAt(MonoTime valid_until, absl::Duration stop_grace);
// When a child that got the stop signal at `signaled_at` is SIGKILLed:
// --stop-grace later, but never later than kKillMargin before `valid_until`.
MonoTime KillAt(MonoTime signaled_at, MonoTime valid_until, absl::Duration stop_grace);
// When the watchdog kills the group if nothing else did.
MonoTime WatchdogKillAt(MonoTime valid_until);

// A healthy leader renews every retry period (stretched by up to 20 %
// jitter), so its validity may fall to --renew-deadline − 1.2 × --retry-period
// just before a renew. A --stop-grace that does not fit below that (with
// kKillMargin) would stop the child on every renew: refused, naming the flags.
absl::Status ValidateStopGrace(absl::Duration stop_grace, absl::Duration renew_deadline,
                               absl::Duration retry_period);

}  // namespace baton::run

#endif  // BATON_SIDECAR_RUN_RUN_POLICY_H_

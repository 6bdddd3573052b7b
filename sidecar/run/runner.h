// Runner: the rules of `baton run` — run the child only while this replica
// leads, and have it gone before that leadership can end.
//
// The child is an application that holds a promise (docs/design.md, "The
// promises"): it is started only from a leader answer taken through
// LeadershipPublisher::Answer under the Runner's client_id, every later
// snapshot of the term is answered the same way (so the ledger's promise
// always covers the running child), and once the child is gone the Runner
// acknowledges the step-down up to the last deadline it answered the child
// with (`acknowledge`: LeadershipPublisher::Acknowledge and
// ElectionLoop::PromisesChanged), which lets a pending release go ahead.
//
// Stops (the stop signal to the child's process group, then SIGKILL of the
// group --stop-grace later):
//   * the answer no longer says leader (step-down, Resign, a lost term);
//   * renews fail: the validity left is down to --stop-grace + kKillMargin
//     (StopSignalAt); the SIGKILL then comes kKillMargin before the validity
//     ends at the latest (KillAt);
//   * Shutdown().
// A child that exits on its own is run again per --restart after
// `restart_delay`; otherwise the Runner finishes with the child's exit code
// (ExitCodeFor), and baton releases and exits with it.
//
// The Runner does no I/O and never blocks: the caller runs Poll() whenever
// the leadership snapshot changed or the instant Poll() last returned has
// come, and reports the child's end with OnChildExit(). Not thread-safe: one
// thread (baton's main thread) makes every call.
#ifndef BATON_SIDECAR_RUN_RUNNER_H_
#define BATON_SIDECAR_RUN_RUNNER_H_

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"
#include "sidecar/run/run_policy.h"
#include "sidecar/run/supervisor.h"

namespace baton::run {

class Runner {
 public:
  struct Options {
    // The command and its arguments.
    std::vector<std::string> argv;
    RestartPolicy restart = RestartPolicy::kOnFailure;
    int stop_signal = SIGTERM;
    absl::Duration stop_grace = absl::Seconds(5);
    // Pause before a child that exited on its own runs again.
    absl::Duration restart_delay = absl::Seconds(1);
    // Under which the child's promises are recorded on the ledger.
    std::string client_id = "baton-run";
    // Gives back the promises recorded under `client_id` that `ack` covers
    // (Daemon::Acknowledge). Required.
    std::function<bool(const Acknowledgement& ack)> acknowledge;
  };

  // `clock`, `publisher` and `supervisor` must outlive the Runner.
  Runner(Options options, Clock* clock, LeadershipPublisher* publisher, Supervisor* supervisor);

  // Brings the child in line with the leadership at clock->Monotonic():
  // starts, signals or kills it. Returns when Poll() must run again if
  // nothing else happens (InfiniteFuture when only a change can matter).
  MonoTime Poll();

  // The child has ended (its process is reaped).
  void OnChildExit(const ExitStatus& status);

  // Stop the child for good (baton is shutting down); Poll() does it.
  void Shutdown();

  // Set once baton should release and exit, with this code: after
  // Shutdown() with the child gone (0), or when the child ended on its own
  // and --restart does not run it again (ExitCodeFor).
  std::optional<int> exit_code() const { return exit_code_; }
  bool child_running() const { return child_.has_value(); }

 private:
  struct Child {
    int64_t token = 0;
    MonoTime valid_until;  // as last answered
    std::optional<MonoTime> signaled_at;
    bool killed = false;
  };

  // Starts a child from `answer` (a leader answer); false if it could not.
  bool StartChild(const Leadership& answer, MonoTime now);
  // Acknowledges term `token` under the client id, up to the answer that
  // ends at `valid_until`.
  void GiveBack(int64_t token, MonoTime valid_until);
  // Sends the stop signal now, logging why.
  void BeginStop(MonoTime now, const char* reason);
  MonoTime PollChild(MonoTime now);
  MonoTime PollIdle(MonoTime now);
  // A child that ended on its own (or could not start) with `status`: run it
  // again later or finish, per --restart.
  void Ended(const ExitStatus& status, MonoTime now);
  // Whether `l` leads at `now` with validity enough to start a child.
  bool CanStart(const Leadership& l, MonoTime now) const;

  const Options options_;
  Clock* const clock_;
  LeadershipPublisher* const publisher_;
  Supervisor* const supervisor_;

  std::optional<Child> child_;
  std::optional<MonoTime> restart_at_;
  bool shutting_down_ = false;
  std::optional<int> exit_code_;
};

// The far future, for "no deadline".
MonoTime MonoInfiniteFuture();

}  // namespace baton::run

#endif  // BATON_SIDECAR_RUN_RUNNER_H_

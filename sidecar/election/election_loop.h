// ElectionLoop: runs an Elector on a thread of its own, publishes what it
// learns, and carries out the step-down handshake.
//
// The loop calls Elector::Step() whenever the elector asks to run, feeds it
// watch events and watch availability as they arrive (waking it early), and
// publishes Elector::Snapshot() to the LeadershipPublisher after every call.
// All election logic lives in Elector; this class waits, hands over, and owns
// the step-down: it alone begins one (on the publisher, which then marks every
// answer not-leader), decides when the Lease may be released, has the elector
// write the release, and ends it. The elector only writes; it knows nothing
// of step-downs.
//
// The step-down handshake (docs/design.md), for Resign() and Shutdown():
//   1. at once, on the caller's thread, LeadershipPublisher::StepDown(): from
//      then on no answer says leader and watchers are told stepping_down;
//   2. on the loop's thread, wait until every promise of the term is
//      acknowledged or has lapsed (LeadershipPublisher::OutstandingUntil),
//      and, on shutdown, no longer than the grace period;
//   3. release (Elector::Resign, which then campaigns again, or
//      Elector::Release, after which the thread ends). A shutdown whose grace
//      ran out first exits without releasing: the Lease then expires, which
//      keeps every promise.
//
// Waiting is on the elector's clock (Clock::AwaitUntil), so with a FakeClock
// the loop moves exactly when a test advances time.
//
// Thread-safety: every public method is thread-safe, except that Start(),
// Shutdown() and the destructor must not run concurrently with each other.
// Shutdown() and the destructor wait for the loop's thread, so they must not
// be called from a LeadershipPublisher subscriber callback or an
// ElectionListener, which run on that thread.
#ifndef BATON_SIDECAR_ELECTION_ELECTION_LOOP_H_
#define BATON_SIDECAR_ELECTION_ELECTION_LOOP_H_

#include <cstdint>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/elector.h"
#include "sidecar/election/leadership.h"
#include "sidecar/election/lease_record.h"

namespace baton {

class ElectionLoop {
 public:
  // `elector` and `publisher` must outlive the loop. From Start() until the
  // loop's thread ends, that thread is the only caller of `elector`.
  ElectionLoop(Elector* elector, LeadershipPublisher* publisher);
  // If still running: Shutdown(absl::ZeroDuration()) (step down without
  // releasing), then waits for the thread to end.
  ~ElectionLoop();

  ElectionLoop(const ElectionLoop&) = delete;
  ElectionLoop& operator=(const ElectionLoop&) = delete;

  // Starts the thread; the first Step() runs at once. Call at most once.
  void Start();

  // Hands a watch event to the loop and returns at once. Events not yet
  // processed are coalesced: only the latest matters.
  void Observe(LeaseEvent event);
  // Tells the loop whether a watch feeds Observe() (see
  // Elector::SetWatchAvailable). Returns at once.
  void SetWatchAvailable(bool available);

  // Steps down now and releases once the promises are settled, then keeps
  // campaigning (Elector::Resign). When it returns true, no answer says this
  // pod leads any more; the rest happens on the loop's thread. Never waits
  // for the loop. False (and nothing done) before Start or after Shutdown.
  bool Resign();

  // Tells the loop a promise was acknowledged (LeadershipPublisher::
  // Acknowledge), so a pending release can go ahead. Returns at once.
  void PromisesChanged();

  // Steps down now, waits for the promises up to `grace`, releases if they
  // were settled in time, and ends the thread. Waits up to `grace` for all
  // that. Returns true if the thread ended in time (it has then been
  // joined), false if it is still finishing a store call, bounded by the
  // store's request deadline (the destructor waits for it). A no-op
  // returning true if the loop never started.
  bool Shutdown(absl::Duration grace);

  // The elector's health as of the end of the loop's last iteration; until
  // the first one, next_step is when Start() was called.
  ElectionHealth Health() const;

 private:
  // What other threads asked for since the loop last looked.
  struct Work {
    std::optional<LeaseEvent> observation;
    std::optional<bool> watch_available;
    // A Resign: the publisher's step-down request to end once it is done.
    std::optional<uint64_t> resign;
    std::optional<MonoTime> stop_deadline;
  };
  // A step-down in progress: of which term, if this elector held one.
  struct StepDown {
    int64_t token = 0;
    bool holding = false;
  };

  void Run();
  // Blocks until something was asked for or `wake` (monotonic) has come;
  // returns (and clears) what was asked for.
  Work WaitForWork(MonoTime wake) ABSL_LOCKS_EXCLUDED(mu_);
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes the elector's snapshot and records its health.
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);
  // When the promises of `step_down`'s term will all be settled; now or
  // earlier if they are.
  MonoTime SettledAt(const StepDown& step_down, MonoTime now) const;

  Elector* const elector_;
  Clock* const clock_;
  LeadershipPublisher* const publisher_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<LeaseEvent> observation_ ABSL_GUARDED_BY(mu_);
  std::optional<bool> watch_available_ ABSL_GUARDED_BY(mu_);
  // The newest Resign not yet taken by the loop: its step-down request.
  std::optional<uint64_t> resign_requested_ ABSL_GUARDED_BY(mu_);
  bool promises_changed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<MonoTime> stop_deadline_ ABSL_GUARDED_BY(mu_);
  // The loop has taken stop_deadline_ (it keeps it from then on).
  bool stop_deadline_reported_ ABSL_GUARDED_BY(mu_) = false;
  ElectionHealth health_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_ELECTION_LOOP_H_

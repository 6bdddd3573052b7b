// ElectionLoop: runs an Elector on a thread of its own and publishes what it
// learns.
//
// The loop calls Elector::Step() whenever the elector asks to run, feeds it
// watch events and watch availability as they arrive (waking it early), and
// publishes Elector::Snapshot() to the LeadershipPublisher after every call.
// It also carries out Resign() and Shutdown() on its thread, publishing the
// stepping-down snapshot before the release write goes out, so no reader sees
// this pod as leader while (or after) the Lease is handed over. All election
// logic lives in Elector; this class only waits and hands over.
//
// Waiting: absl::Mutex deadlines run on real (wall-clock) time, while the
// elector's times are on the injected monotonic clock. The loop converts by
// waiting for (wake - clock->Monotonic()) and re-reading the clock when it
// wakes; no single wait is longer than the retry period, so a step of the wall
// clock delays a wake by at most that much.
//
// Thread-safety: every public method is thread-safe, except that Start(),
// Shutdown() and the destructor must not run concurrently with each other.
// Resign(), Shutdown() and the destructor wait for the loop's thread, so they
// must not be called from a LeadershipPublisher subscriber callback or an
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

  // Hands a watch event (nullopt: the Lease was deleted) to the loop and
  // returns at once. Events not yet processed are coalesced: only the latest
  // state matters.
  void Observe(std::optional<LeaseRecord> record);
  // Tells the loop whether a watch feeds Observe() (see
  // Elector::SetWatchAvailable). Returns at once.
  void SetWatchAvailable(bool available);

  // Asks the loop to step down and release now (Elector::Resign) and waits up
  // to `timeout` until it has published the stepped-down snapshot, so every
  // answer from then on says not leader; the release write follows on the
  // loop's thread without being waited for. Returns whether the step-down was
  // published in time; if not, it still happens once the loop gets to it.
  // False also after Shutdown.
  bool Resign(absl::Duration timeout);

  // Publishes stepping_down, releases the Lease (Elector::Release) if the
  // grace period has not passed yet, publishes again and ends the thread.
  // Waits up to `grace` for all that. Returns true if the thread ended in
  // time (it has then been joined), false if it is still finishing a store
  // call, bounded by the store's request deadline (the destructor waits for
  // it). A no-op returning true if the loop never started.
  bool Shutdown(absl::Duration grace);

  // The elector's health as of the end of the loop's last iteration; until
  // the first one, next_step is when Start() was called.
  ElectionHealth Health() const;

 private:
  // What other threads asked for since the loop last looked.
  struct Work {
    std::optional<std::optional<LeaseRecord>> observation;
    std::optional<bool> watch_available;
    uint64_t resign_requests = 0;  // the highest request id taken
    std::optional<MonoTime> stop_deadline;
  };

  void Run();
  // Blocks until something was asked for or `wake` (monotonic) has come;
  // returns (and clears) what was asked for.
  Work WaitForWork(MonoTime wake) ABSL_LOCKS_EXCLUDED(mu_);
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes the elector's snapshot and records its health.
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);

  Elector* const elector_;
  Clock* const clock_;
  LeadershipPublisher* const publisher_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::optional<LeaseRecord>> observation_ ABSL_GUARDED_BY(mu_);
  std::optional<bool> watch_available_ ABSL_GUARDED_BY(mu_);
  uint64_t resigns_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t resigns_taken_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t resigns_stepped_down_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<MonoTime> stop_deadline_ ABSL_GUARDED_BY(mu_);
  ElectionHealth health_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_ELECTION_LOOP_H_

// Leadership: what this sidecar knows about its Lease, as one immutable
// snapshot, and LeadershipPublisher, the one object shared across threads that
// hands the latest snapshot from the election loop to the local API servers.
//
// Whether this sidecar leads is not stored: it is computed from the snapshot at
// the moment it is asked (IsLeader(now)), so a leader that was paused past its
// renew deadline answers false on the first question after it wakes, before
// the election loop has run again.
#ifndef BATON_SIDECAR_ELECTION_LEADERSHIP_H_
#define BATON_SIDECAR_ELECTION_LEADERSHIP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"

namespace baton {

struct Leadership {
  // This sidecar's identity and the Lease it campaigns for.
  std::string identity;
  std::string lease_name;
  std::string lease_namespace;
  // metadata.uid of the Lease last observed; empty before the first read or
  // while it does not exist.
  std::string lease_uid;

  // True once the Lease (or its absence) has been read successfully.
  bool observed = false;
  // The holder as last observed (may be this sidecar); empty if nobody.
  std::string holder_identity;
  // This sidecar's last write made it the holder, and it has not since seen
  // anything else. Leading also needs the time check below.
  bool holding = false;
  // While holding: leadership is guaranteed until this monotonic instant
  // (send time of the last successful write + renew deadline).
  MonoTime leader_until;
  // The fencing token: leaseTransitions as written by this holder's winning
  // acquisition while holding; otherwise the last observed leaseTransitions.
  int64_t fencing_token = 0;
  // Spec fields of the last observed Lease.
  std::optional<absl::Time> acquire_time;
  std::optional<absl::Time> renew_time;
  int32_t lease_duration_seconds = 0;
  // Shutdown (or Resign) has begun: never report leader again in this term.
  bool stepping_down = false;

  bool IsLeader(MonoTime now) const { return holding && !stepping_down && now < leader_until; }
  // Remaining guaranteed leadership; zero when not leader.
  absl::Duration ValidFor(MonoTime now) const {
    return IsLeader(now) ? leader_until - now : absl::ZeroDuration();
  }

  friend bool operator==(const Leadership&, const Leadership&) = default;
};

// Holds the current Leadership and tells interested parties when it changes.
//
// Thread-safe. Publish is called by the election loop; readers (HTTP and gRPC
// handlers) call Current, WaitForChange or Subscribe from any thread. No
// callback is ever invoked while the internal lock is held.
class LeadershipPublisher {
 public:
  // A snapshot and its version; versions start at 1 and grow by one per change.
  struct Versioned {
    Leadership leadership;
    uint64_t version = 0;
  };
  using Callback = std::function<void(const Versioned&)>;

  explicit LeadershipPublisher(Leadership initial);

  // Replaces the snapshot. If it differs from the current one, bumps the
  // version, wakes WaitForChange callers and invokes every subscriber on the
  // calling thread (outside the lock). Publishing an equal snapshot is a no-op.
  void Publish(const Leadership& next);

  Versioned Current() const;

  // Blocks until the version exceeds `after` or `deadline` passes; returns the
  // current snapshot either way.
  Versioned WaitForChange(uint64_t after, absl::Time deadline) const;

  // Registers `cb` to run after every change; returns an id for Unsubscribe.
  // After Unsubscribe returns, `cb` is not running and will not run again,
  // unless Unsubscribe is called from within `cb` itself.
  int Subscribe(Callback cb);
  void Unsubscribe(int id);

 private:
  mutable absl::Mutex mu_;
  Versioned current_ ABSL_GUARDED_BY(mu_);
  int next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int, std::shared_ptr<Callback>> subscribers_ ABSL_GUARDED_BY(mu_);
  // Serialises notification so subscribers see versions in order, and lets
  // Unsubscribe wait for an in-flight callback.
  absl::Mutex notify_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The thread running callbacks right now, if any.
  std::atomic<std::thread::id> notifying_thread_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_LEADERSHIP_H_

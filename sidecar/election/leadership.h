// Leadership: what this sidecar knows about its Lease, as one immutable
// snapshot, and LeadershipPublisher, the one object shared across threads that
// hands the latest snapshot from the election loop to the local API servers
// and keeps account of the promises those servers hand out.
//
// Whether this sidecar leads is not stored: it is computed from the snapshot at
// the moment it is asked (IsLeader(now)), so a leader that was paused past its
// renew deadline answers false on the first question after it wakes, before
// the election loop has run again.
//
// Promises (docs/design.md, "The step-down handshake"): every answer that says
// "leader" promises its reader that nobody else leads until the snapshot's
// leader_until. The publisher records each one as it is given (Promise), per
// client_id when the reader named itself, and forgets a client's promises up
// to the deadline that client names when it acknowledges the end of its
// leader work (Acknowledge). The election loop releases the Lease only once
// OutstandingUntil() has passed.
#ifndef BATON_SIDECAR_ELECTION_LEADERSHIP_H_
#define BATON_SIDECAR_ELECTION_LEADERSHIP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/lease_record.h"

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
  // The second fencing token: the resourceVersion of the write that won this
  // term while holding; otherwise that of the last observed Lease. Unset
  // when unknown or without KEP-5504's order (not a decimal integer).
  std::optional<ResourceVersion> fencing_revision;
  // Shutdown (or Resign) has begun: never report leader again in this term.
  bool stepping_down = false;

  bool IsLeader(MonoTime now) const { return holding && !stepping_down && now < leader_until; }
  // Remaining guaranteed leadership; zero when not leader.
  absl::Duration ValidFor(MonoTime now) const {
    return IsLeader(now) ? leader_until - now : absl::ZeroDuration();
  }

  friend bool operator==(const Leadership&, const Leadership&) = default;
};

// A reader's acknowledgement that it has stopped acting as leader on what
// it was told (gRPC AcknowledgeStepDown, HTTP POST /leader/ack, `baton run`).
struct Acknowledgement {
  // The name the reader asked under; never empty. Whoever uses the name is
  // that reader: an acknowledgement speaks for every process sharing it.
  std::string_view client_id;
  // The term: the fencing token of the answers acted on.
  int64_t fencing_token = 0;
  // The deadline (leader_until; valid_until_boottime on the wire) of the
  // last answer acted on. The acknowledgement covers the reader's promises
  // of the term that end at or before it, compared at the nanosecond
  // resolution answers carry deadlines in; a promise that ends later was
  // handed out after that answer and stays outstanding. nullopt: every
  // promise of the term handed out to the reader so far, however late the
  // acknowledgement arrives (what an acknowledgement meant before deadlines
  // were named; it can void a promise given after the work it speaks of).
  std::optional<MonoTime> up_to;
};

// One answer to one reader: the snapshot as that reader is told it, and the
// instant it was given. Only LeadershipPublisher::Promise makes one, and only
// after recording the promise it carries if it says leader; the local API's
// formats (leadership_proto.h) print nothing else, so no surface can tell a
// reader "leader" without that promise on the ledger.
class LeaderAnswer {
 public:
  const Leadership& leadership() const { return leadership_; }
  // The version of the snapshot it was read from (LeadershipPublisher::Versioned).
  uint64_t version() const { return version_; }
  // When it was given: what is_leader and valid_for are evaluated at.
  MonoTime at() const { return at_; }

 private:
  friend class LeadershipPublisher;
  LeaderAnswer(Leadership leadership, uint64_t version, MonoTime at)
      : leadership_(std::move(leadership)), version_(version), at_(at) {}

  Leadership leadership_;
  uint64_t version_;
  MonoTime at_;
};

// Holds the current Leadership, tells interested parties when it changes, and
// keeps the ledger of promises handed out in the current term.
//
// Thread-safe. Publish is called by the election loop; readers (HTTP and gRPC
// handlers) call Promise, Current, WaitForChange or Subscribe from any thread.
// No callback is ever invoked while the internal lock is held.
class LeadershipPublisher {
 public:
  // The most named readers whose promises the ledger tracks at once. Only
  // readers with a live promise count: one that has lapsed constrains
  // nothing and is dropped when room is needed. A reader that names itself
  // while this many others hold live promises is answered as usual, but its
  // promise is kept as an anonymous one (it only lapses) and its
  // acknowledgements void nothing until it finds room; the readers already
  // tracked keep theirs. So a flood of names (a client per request) costs
  // bounded memory and degrades only the readers past the limit.
  static constexpr int kMaxTrackedClients = 1024;

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

  // The answer to a reader at `now`, promising at most until `at_most`: its
  // leader_until is the snapshot's, or `at_most` if that is earlier (a reader
  // that asked for less, LocalApi). If it says leader at `now`, records,
  // atomically with reading the snapshot, a promise to `client_id` (empty:
  // anonymous) lasting exactly until the leader_until it carries. Every
  // answer that may tell a reader "leader" (HTTP, gRPC unary, each watch
  // message) is built from one obtained here at the time it is built, never
  // from an older one: that is what lets a step-down that began after
  // Promise returned wait for it.
  LeaderAnswer Promise(std::string_view client_id, MonoTime now,
                       MonoTime at_most = MonoTime::InfiniteFuture());

  // Begins stepping down at once, from any thread, without waiting for the
  // election loop (ElectionLoop, which owns the step-down, calls it): from
  // now until EndStepDown(the number returned), every snapshot — the current
  // one and any the loop publishes meanwhile, e.g. the result of a takeover
  // that was in flight — is published with stepping_down=true, so no answer
  // says leader. The snapshots the loop publishes never set it themselves.
  // Subscribers are told on the calling thread, so it must not be called
  // from a subscriber. Returns this request's number.
  uint64_t StepDown();

  // The step-down requested as `request` (and every earlier one) is over:
  // the election loop has released the Lease and campaigns again (Resign).
  // Later snapshots may say leader again, unless a later StepDown() came.
  void EndStepDown(uint64_t request);

  // The reader `ack.client_id` has stopped acting on the answers of term
  // `ack.fencing_token` up to `ack.up_to` (see Acknowledgement): its
  // promises of the current term that end by then are void. Returns true if
  // that settled the reader: it had a promise outstanding at `now` and none
  // that ends later. False if it had none outstanding (another term, an
  // unknown name, all lapsed or already acknowledged) or if it holds a later
  // promise, which stays outstanding.
  bool Acknowledge(const Acknowledgement& ack, MonoTime now);

  // Every promise handed out so far is void: their readers are known to be
  // gone (the Pod's application containers have exited, --native-sidecar).
  // Call only after StepDown(), so that no new one can be given.
  void VoidPromises();

  // How many named readers the ledger tracks now: at most
  // kMaxTrackedClients, lapsed ones included until room is needed.
  int TrackedClients() const;

  // The instant at which the last promise of term `token` that was neither
  // acknowledged nor lapsed by `now` ends; nullopt if there is none (or the
  // ledger is about another term).
  std::optional<MonoTime> OutstandingUntil(int64_t token, MonoTime now) const;

  // Blocks until the version exceeds `after` or `clock` reaches `deadline`;
  // returns the current snapshot either way.
  Versioned WaitForChange(uint64_t after, MonoTime deadline, const Clock& clock) const;

  // Registers `cb` to run after every change; returns an id for Unsubscribe.
  // After Unsubscribe returns, `cb` is not running and will not run again,
  // unless Unsubscribe is called from within `cb` itself.
  int Subscribe(Callback cb);
  void Unsubscribe(int id);

 private:
  // The promises of one term: when the last anonymous one ends, and each
  // named client's latest (a promise that ends earlier adds nothing to it).
  struct Ledger {
    std::optional<int64_t> token;
    std::optional<MonoTime> anonymous_until;
    absl::flat_hash_map<std::string, MonoTime> by_client;
    // No promise in by_client ends before this: a lower bound, exact right
    // after DropLapsedLocked. Until `now` reaches it, no entry has lapsed,
    // so a full ledger is not searched for room on every answer.
    MonoTime first_end;
  };

  // Records a promise to the named reader `client_id` until `until`;
  // false, recording nothing, if it is not tracked and there is no room
  // for it even after dropping the lapsed ones.
  bool TrackLocked(std::string_view client_id, MonoTime until, MonoTime now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the named readers whose promises have all lapsed by `now`.
  void DropLapsedLocked(MonoTime now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Replaces the snapshot with `next` unless equal; applies the step-down
  // mark while a step-down is requested and not ended, and starts a new
  // ledger when the term changes. Returns whether the snapshot changed, and
  // then fills `to_call` with the subscribers to tell.
  bool ReplaceLocked(Leadership next, std::vector<std::shared_ptr<Callback>>* to_call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publish and StepDown: ReplaceLocked under the lock, callbacks outside it,
  // serialised by notify_mu_. `edit` turns the current snapshot into the next.
  void Change(const std::function<void(Leadership*)>& edit);

  mutable absl::Mutex mu_;
  Versioned current_ ABSL_GUARDED_BY(mu_);
  // StepDown() requests so far, and the newest one EndStepDown() ended:
  // stepping down while requested_ > ended_.
  uint64_t step_downs_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t step_downs_ended_ ABSL_GUARDED_BY(mu_) = 0;
  Ledger ledger_ ABSL_GUARDED_BY(mu_);
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

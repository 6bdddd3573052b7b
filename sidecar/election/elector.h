// Elector: the leader-election state machine for one Lease, compatible with
// client-go's tools/leaderelection.
//
// It is pure: every input comes through the injected Clock and LeaseStore, and
// the caller decides when it runs. It never sleeps, never starts a thread and
// never reads a clock it was not given. ElectionLoop (election_loop.h) drives
// it in the daemon; tests drive it directly with a FakeClock and a
// FakeLeaseStore.
//
// Protocol (docs/design.md, "Lease protocol"):
//   create    holderIdentity=self, leaseDurationSeconds, acquireTime=renewTime=now,
//             leaseTransitions=0, or one above the highest this elector has
//             seen for the Lease, so the fencing token never goes backwards
//   renew     renewTime, and leaseDurationSeconds back to ours if someone
//             changed it (it is the holder's promise)
//   take over holderIdentity=self, leaseDurationSeconds, acquireTime=renewTime=now,
//             leaseTransitions+1
//   release   holderIdentity="", leaseDurationSeconds=1, acquireTime=renewTime=now
// Every update carries the resourceVersion it was based on; a conflict means
// someone else wrote first, and is answered with a fresh read, never a retry.
//
// Expiry of someone else's claim is judged on the monotonic clock: from the
// moment this elector last saw the record change (client-go's observedTime),
// plus the leaseDurationSeconds written in it. Wall-clock times in the record
// are written for other readers and never compared with the local wall clock.
// A claim never ends early (docs/design.md, P4):
//   * someone else's term lasts at least this elector's own lease_duration
//     from when it was seen, whatever leaseDurationSeconds says: a third
//     party may have cut it after its holder promised more, and a member that
//     did not see the term before the edit cannot tell;
//   * claims only grow. They end early only when this elector sees a release
//     of the term it last saw (same uid, same leaseTransitions, holder
//     cleared, leaseDurationSeconds 1), acquires the Lease itself, or sees
//     the Lease deleted: whoever held it can no longer renew, so a member
//     that sees it vanish recreates it at once (an unseen term, below);
//   * an elector whose first observation is "no Lease" waits
//     kNoHistoryCreateDelay retry periods before creating it (time for any
//     candidate that did see the Lease to notice the deletion and recreate it
//     first, with a higher token).
// Unseen terms (docs/design.md, P4): anything that shows no holder — no
// Lease, a first observation, a new uid, a cleared holder that is not such a
// release — may hide a term this elector never saw (a Lease deleted and
// re-applied, a term that came and went between two polls, watch events
// coalesced), whose holder may still be leading. Such a Lease is acquired
// (which stops the hidden holder from renewing; a Lease without a holder at
// once, whatever claims remain), but the new term leads only once those
// claims have lapsed and UnseenPromiseBound(renew_deadline) has passed since
// its acquiring write returned (timing.h). These rules assume members that
// share --lease-duration and --renew-deadline.
//
// Leadership: after a successful write that makes (or keeps) this elector the
// holder, it leads until (monotonic send time of that write) +
// min(renew_deadline, SafeLeadershipFor(the leaseDurationSeconds written))
// (timing.h). Failed renews change nothing until then; past it, it no longer
// leads, and keeps campaigning. The snapshot (Snapshot()) carries that instant
// so that Leadership::IsLeader(now) answers correctly even if Step() is never
// called again.
//
// Ordering: observations carry resourceVersions; one older than what the
// elector already knows is dropped. Watch events never end a term: one that
// shows the Lease changed under a leader only makes the next Step() come at
// once, and that step's own write and read decide.
//
// "Our term": a record counts as this elector's own only if it names this
// identity AND carries the acquireTime and leaseTransitions of an acquisition
// this elector sent. So a write that landed although it reported failure is
// recognised and resumed (renewed, same token) instead of taken over again,
// and a Lease left by an earlier process with the same --identity is treated
// like any other holder's: waited out, then taken over with a new token.
//
// Thread-safety: not thread-safe. One thread at a time calls the methods below
// (the ElectionLoop's thread in the daemon). Snapshot() returns a value that
// may be handed to other threads.
#ifndef BATON_SIDECAR_ELECTION_ELECTOR_H_
#define BATON_SIDECAR_ELECTION_ELECTOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"
#include "sidecar/election/lease_record.h"
#include "sidecar/election/lease_store.h"
#include "sidecar/election/timing.h"

namespace baton {

// Receives election events, e.g. to export metrics. Methods are called
// synchronously on the elector's thread; they must be quick and must not call
// back into the Elector.
class ElectionListener {
 public:
  virtual ~ElectionListener() = default;
  // A renew write finished (successfully or not) after `latency`.
  virtual void OnRenew(absl::Duration latency, bool ok) = 0;
  // This elector leads, as the holder of a term it acquired (from the moment
  // that term may lead, see "Unseen terms"); `token` is its fencing token.
  virtual void OnAcquired(int64_t token) = 0;
  // This elector stopped holding the Lease after OnAcquired; `reason` as in
  // its log line:
  // renew_deadline_passed, lease_changed_hands or lease_deleted when lost,
  // shutdown or resign when it stepped down.
  virtual void OnLost(std::string_view reason) = 0;
  // This elector blanked the Lease (release on shutdown or resign).
  virtual void OnReleased() = 0;
  // The leader's renew of its cached record met a changed or deleted Lease,
  // so it read the Lease again before deciding: client-go's "slow path".
  virtual void OnSlowPath() = 0;
  // The observed holder changed; empty when nobody holds the Lease or it does
  // not exist. May be this elector's own identity.
  virtual void OnObservedHolder(const std::string& holder) = 0;
};

// Inputs for the daemon's /healthz and /readyz.
struct ElectionHealth {
  // The last time the API server answered usefully: a successful call, a
  // NotFound/AlreadyExists/Conflict answer, or a watch event. Unset until then.
  std::optional<MonoTime> last_api_contact;
  // When the elector wants Step() to run next.
  MonoTime next_step;

  // The driving loop is more than `slack` late for the next step.
  bool Overdue(MonoTime now, absl::Duration slack) const { return now > next_step + slack; }
};

class Elector {
 public:
  // Largest fraction by which a retry period is stretched at random, so that
  // candidates do not retry in lock step: docs/design.md's "retryPeriod × 1.2",
  // the bound the daemon's ValidateTiming checks (kRetryJitter there).
  static constexpr double kMaxJitter = 0.2;
  // How many retry periods an elector whose first read finds no Lease waits
  // before creating it: a member that saw it vanish notices on its watch
  // event, or on a poll at most 1 + kMaxJitter retry periods later, and
  // recreates it at once; the rest is for that write to land.
  static constexpr int kNoHistoryCreateDelay = 2;
  // How many retry periods a follower's watch may stay quiet while someone
  // else holds the Lease before the follower reads it itself (see
  // SetWatchAvailable): a holder renews every retry period, and each renew
  // is a watch event, so three quiet periods mean the watch has stalled or
  // the holder has stopped renewing.
  static constexpr int kQuietWatchPeriods = 3;

  struct Options {
    // This process's holder identity; unique per process (see docs/design.md).
    std::string identity;
    std::string lease_name;
    std::string lease_namespace;
    // Written into the Lease as leaseDurationSeconds (rounded up to whole
    // seconds): how long after the last renew others must wait to take over.
    absl::Duration lease_duration = ElectionTiming{}.lease_duration;
    // A leader leads for this long after sending its last successful write.
    absl::Duration renew_deadline = ElectionTiming{}.renew_deadline;
    // Interval between renews (leader) and reads (follower without a watch),
    // stretched by up to kMaxJitter.
    absl::Duration retry_period = ElectionTiming{}.retry_period;
    // Release() hands the Lease over on shutdown instead of letting it expire.
    bool release_on_shutdown = true;
    // Returns a fraction in [0, 1] (values outside are clamped); each retry
    // period becomes retry_period × (1 + kMaxJitter × fraction). Unset: a
    // uniformly random fraction. Tests pin it.
    std::function<double()> jitter;
    // Optional; must outlive the Elector.
    ElectionListener* listener = nullptr;
  };

  // Preconditions: the durations are positive, renew_deadline <=
  // SafeLeadershipFor(lease_duration) (timing.h) and retry_period × (1 +
  // kMaxJitter) < renew_deadline (the daemon validates its flags with
  // ValidateTiming); identity is not empty. `clock` and `store`
  // must outlive the Elector.
  Elector(Options options, Clock* clock, LeaseStore* store);

  Elector(const Elector&) = delete;
  Elector& operator=(const Elector&) = delete;

  // One round of acquire-or-renew, client-go's tryAcquireOrRenew: at most four
  // store calls (a leader's renew, a read, one write, one re-read after a
  // conflict), each bounded by the store's request deadline. Returns when it wants to run next:
  // holding, every retry period but never later than the end of its
  // leadership; following with a watch, when the observed Lease expires;
  // following without, every retry period (or at expiry, if sooner).
  // Must not be called after Release().
  MonoTime Step();

  // Feeds what a watch saw. Dropped if its resourceVersion is not newer than
  // the last one known, or if it is an absence without one. The observed time
  // moves only if the record differs from the one last seen. While holding,
  // an event that does not show our term changes nothing but the time of the
  // next Step(), which becomes now. Returns the new time for the next Step()
  // (now, if the Lease just became free). Makes no store calls.
  MonoTime Observe(const LeaseEvent& event);

  // Tells the elector whether a watch feeds Observe(). Without one (the
  // default, and e.g. when RBAC forbids watch) a follower polls every retry
  // period; with one it sleeps until the observed Lease expires, unless
  // someone else holds it and the watch has been quiet kQuietWatchPeriods
  // retry periods: then it polls as without one until the watch delivers
  // again (a watch can stall with its connection open, and a follower that
  // slept on it would see a crashed holder's expiry up to a lease duration
  // late). Returns the new time for the next Step(). Makes no store calls.
  MonoTime SetWatchAvailable(bool available);

  // Shutdown: if release_on_shutdown and this elector has ever sent an
  // acquisition, a fresh read and, only if that still shows this elector's
  // term, an update with the read's resourceVersion writing the release
  // fields. A Lease that someone else holds is never touched. Afterwards the
  // elector holds nothing and Step() must not be called again. The step-down
  // that precedes it (no answer says leader, the promises settle) is
  // ElectionLoop's; the elector only writes.
  void Release();

  // Release now (regardless of release_on_shutdown), then keep campaigning.
  // To let someone else have it, this elector does not take the Lease back
  // while it is free (or still shows our term, if the release failed) until
  // another holder has acquired it or one lease_duration has passed. A no-op
  // when not holding. Returns the time for the next Step().
  MonoTime Resign();

  // The leadership to publish. IsLeader(now) on it is correct at any later
  // instant, until the next call that changes the elector.
  Leadership Snapshot() const;

  ElectionHealth Health() const;

  const Options& options() const { return options_; }
  Clock* clock() const { return clock_; }

 private:
  // The acquisition (create or take over) this elector last sent.
  struct Term {
    absl::Time acquire_time;
    int32_t lease_transitions = 0;
    // resourceVersion of the first record that showed this term as stored:
    // the winning write's. Unset until then, or if it has no KEP-5504
    // order.
    std::optional<ResourceVersion> revision;
    // The state it was acquired over may hide a term this elector never saw:
    // the term leads only UnseenPromiseBound after the acquisition returned.
    bool over_unseen = false;
    // Claims on the Lease when it was acquired: it leads no earlier.
    MonoTime claimed_until;
    // This term has led: resuming it (after a renew failure that left it in
    // the Lease) needs no further wait.
    bool led = false;
  };
  enum class Write { kCreate, kTakeOver, kRenew };

  // Sets and returns the next step time. `api_answered`: whether this step's
  // last store call got an answer (if not, a follower retries after a period).
  MonoTime Schedule(MonoTime now, bool api_answered);
  // When this candidate may next act on what it has observed: now for a free
  // or missing Lease or our own term (after any resign hold-off), the expiry
  // instant for someone else's.
  MonoTime ActAt(MonoTime now) const;
  // When a follower with a watch next steps: ActAt(now), or, while someone
  // else holds the Lease, no later than kQuietWatchPeriods retry periods
  // after the watch last spoke, and a retry period from now once it has
  // been quiet that long (logged once per quiet spell).
  MonoTime FollowWithWatch(MonoTime now);
  absl::Duration JitteredRetryPeriod();

  // Records `record` (nullopt: absent) as the latest observed state, read by
  // this elector itself (or seen by a watch while not holding); moves the
  // observed time and the claim's expiry if it differs from the last one.
  // Logs and reports a new holder. Stops holding if the record shows someone
  // else's term.
  void Note(const std::optional<LeaseRecord>& record, MonoTime now);
  // Moves claimed_until_ for the new observation `record` of the Lease,
  // which was *previous (nullptr: never observed before), by the rules in the
  // header comment.
  void UpdateClaim(const std::optional<LeaseRecord>* previous,
                   const std::optional<LeaseRecord>& record, MonoTime now);
  // The next token: one above the highest seen (zero with no history);
  // nullopt once leaseTransitions (an int32) cannot grow any more.
  std::optional<int32_t> NextToken() const;
  bool IsOurs(const LeaseRecord& record) const;
  // Stamps `next` (renewTime; acquireTime too unless renewing) and sends it
  // as a create/take-over/renew write; on success this elector holds the
  // Lease until the send time + renew_deadline (at most what the written
  // duration grants).
  absl::Status WriteAsHolder(Write kind, LeaseRecord next);
  // After a conflict (or NotFound) on a write: reads the Lease to learn who
  // won. Makes no further write.
  absl::Status ReadAfterConflict();
  // The release write, guarded by a fresh read.
  void ReleaseIfOurs(const char* why);
  // Tells the listener this elector leads, once leading_from_ has come.
  void AnnounceIfLeading(MonoTime now);
  // Stops holding (no I/O) and says so in the log (as `event`, with what
  // comes `next`) and, if it was told this elector led, to the listener.
  void StopHolding(const char* event, const char* reason, const char* next = "keep campaigning");
  // Health and failure bookkeeping for one store call's outcome; logs the
  // first failure of a run and the recovery.
  void NoteApiResult(const absl::Status& status, const char* verb, MonoTime now);
  // What this elector will do next, for log lines.
  std::string NextAction(MonoTime now) const;
  // Wall time for a Lease field, at the microsecond precision a MicroTime keeps,
  // so that what we wrote compares equal to what we read back.
  absl::Time WallNow() const;
  int32_t WrittenDurationSeconds() const;

  const Options options_;
  Clock* const clock_;
  LeaseStore* const store_;
  std::function<double()> jitter_;
  const std::string lease_ref_;  // "namespace/name", for logs

  // What this elector knows of the Lease.
  bool observed_ = false;                       // a read or watch event has succeeded
  std::optional<LeaseRecord> record_;           // nullopt: absent (or never read)
  std::optional<int32_t> highest_transitions_;  // across every record seen
  // The newest resourceVersion seen (record or deletion) that has an order.
  std::optional<ResourceVersion> known_revision_;
  // Until this instant a term this elector may not take over may still be
  // promised to its holder's readers: someone else's observed term, also
  // after it vanished, or a term this elector could not have seen. Unset when
  // the Lease is free for us.
  std::optional<MonoTime> claimed_until_;

  // The Lease as last observed may hide a term this elector never saw (see
  // "Unseen terms" above); an acquisition over it leads only later.
  bool may_hide_term_ = true;

  // What this elector holds. While holding, it leads from leading_from_
  // until leader_until_.
  std::optional<Term> term_;
  bool holding_ = false;
  MonoTime leading_from_;
  MonoTime leader_until_;
  // The listener has been told of this term (OnAcquired).
  bool announced_ = false;
  // After Resign(): do not take the Lease back before `until`, unless someone
  // else has acquired it meanwhile (which clears it): a record held by
  // another, or one whose leaseTransitions passed the resigned term's, since
  // a term can begin and end between two records this elector sees.
  struct ResignHoldOff {
    MonoTime until;
    int32_t resigned_transitions = 0;
  };
  std::optional<ResignHoldOff> resign_hold_off_;

  // Scheduling and health.
  bool watch_available_ = false;
  MonoTime watch_heard_at_;          // the watch's last event, or its start
  bool watch_quiet_logged_ = false;  // this quiet spell has been logged
  MonoTime next_step_;
  std::optional<MonoTime> last_api_contact_;
  // Consecutive failed store calls and when the first failed: logged once at
  // the start of trouble and once at its end, not on every retry.
  int failures_ = 0;
  MonoTime failing_since_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_ELECTOR_H_

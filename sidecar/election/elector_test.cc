#include "sidecar/election/elector.h"

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/election/fake_lease_store.h"
#include "sidecar/election/leadership.h"

namespace baton {
namespace {

using ::testing::ElementsAre;
using Verb = FakeLeaseStore::Verb;

constexpr absl::Duration kLeaseDuration = absl::Seconds(15);
constexpr absl::Duration kRenewDeadline = absl::Seconds(10);
constexpr absl::Duration kRetryPeriod = absl::Seconds(2);

class RecordingListener final : public ElectionListener {
 public:
  void OnRenew(absl::Duration latency, bool ok) override { renews.emplace_back(latency, ok); }
  void OnAcquired(int64_t token) override { acquired.push_back(token); }
  void OnLost(std::string_view reason) override {
    ++lost;
    lost_reasons.emplace_back(reason);
  }
  void OnReleased() override { ++released; }
  void OnSlowPath() override { ++slow_paths; }
  void OnObservedHolder(const std::string& holder) override { holders.push_back(holder); }

  std::vector<std::pair<absl::Duration, bool>> renews;
  std::vector<int64_t> acquired;
  int lost = 0;
  std::vector<std::string> lost_reasons;
  int released = 0;
  int slow_paths = 0;
  std::vector<std::string> holders;
};

// A LeaseStore whose every call takes `latency` of fake time.
class SlowStore final : public LeaseStore {
 public:
  SlowStore(LeaseStore* inner, FakeClock* clock, absl::Duration latency)
      : inner_(inner), clock_(clock), latency_(latency) {}
  absl::StatusOr<LeaseRecord> Get() override { return Slowly(inner_->Get()); }
  absl::StatusOr<LeaseRecord> Create(const LeaseRecord& r) override {
    return Slowly(inner_->Create(r));
  }
  absl::StatusOr<LeaseRecord> Update(const LeaseRecord& r) override {
    return Slowly(inner_->Update(r));
  }

 private:
  absl::StatusOr<LeaseRecord> Slowly(absl::StatusOr<LeaseRecord> result) {
    clock_->Advance(latency_);
    return result;
  }
  LeaseStore* inner_;
  FakeClock* clock_;
  absl::Duration latency_;
};

class ElectorTest : public ::testing::Test {
 protected:
  ElectorTest() { Reset(DefaultOptions()); }

  Elector::Options DefaultOptions(const std::string& identity = "me") {
    Elector::Options o;
    o.identity = identity;
    o.lease_name = "lock";
    o.lease_namespace = "ns";
    o.lease_duration = kLeaseDuration;
    o.renew_deadline = kRenewDeadline;
    o.retry_period = kRetryPeriod;
    o.jitter = [] { return 0.0; };
    o.listener = &listener_;
    return o;
  }
  void Reset(Elector::Options options, LeaseStore* store = nullptr) {
    elector_ = std::make_unique<Elector>(std::move(options), &clock_, store ? store : &store_);
  }

  MonoTime Now() const { return clock_.Monotonic(); }
  absl::Time Wall() const { return clock_.Wall(); }
  bool IsLeader() const { return elector_->Snapshot().IsLeader(Now()); }
  std::string Holder() const { return store_.Current()->holder_identity; }

  // Writes a Lease held by `holder` as another client would.
  LeaseRecord SetLease(const std::string& holder, int32_t duration_seconds = 15,
                       int32_t transitions = 3) {
    LeaseRecord r;
    r.holder_identity = holder;
    r.lease_duration_seconds = duration_seconds;
    r.acquire_time = r.renew_time = Wall();
    r.lease_transitions = transitions;
    return store_.Set(r);
  }
  // Another client renews the Lease it holds.
  LeaseRecord RenewForeign() {
    LeaseRecord r = *store_.Current();
    r.renew_time = Wall();
    return store_.Set(r);
  }
  // Acquires the absent Lease (after the wait of a candidate with no
  // history, and the wait before a term created over no Lease leads) and
  // checks that it worked. Store calls are counted from zero after it.
  void Acquire() {
    for (int i = 0; i < 100; ++i) {
      const MonoTime next = elector_->Step();
      if (IsLeader()) break;
      clock_.Advance(next - Now());
    }
    ASSERT_TRUE(IsLeader());
    store_.ClearCalls();
  }
  // Another holder's term with `transitions`, seen by this elector, then
  // released by that holder (the release is stored, not yet read): the next
  // Step() may take it over at once with token `transitions` + 1.
  void SeeTermThenItsRelease(int32_t transitions) {
    SetLease("other", /*duration_seconds=*/15, transitions);
    elector_->Step();
    ASSERT_FALSE(IsLeader());
    store_.Set(Released(*store_.Current()));
  }
  // Leads with token `transitions` + 1, taken over from a released Lease.
  void TakeOverReleased(int32_t transitions) {
    SeeTermThenItsRelease(transitions);
    elector_->Step();
    ASSERT_TRUE(IsLeader());
    ASSERT_EQ(elector_->Snapshot().fencing_token, transitions + 1);
  }
  // `held` as its holder's release writes it (baton's and client-go's).
  LeaseRecord Released(LeaseRecord held) const {
    held.holder_identity.clear();
    held.lease_duration_seconds = 1;
    held.acquire_time = held.renew_time = Wall();
    return held;
  }
  // A first observation of "no Lease", and the wait that follows it.
  void WaitOutNoHistory() {
    elector_->Step();
    clock_.Advance(Elector::kNoHistoryCreateDelay * kRetryPeriod);
  }
  // The store and machine faults of the property tests below, by `kind`:
  // 0 failing calls, 1 a write whose answer is lost, 2 everyone paused for
  // up to `max_pause`. False (and nothing done) for any other kind.
  bool InjectFault(uint32_t kind, std::mt19937& rng, absl::Duration max_pause) {
    switch (kind) {
      case 0:
        store_.FailNextCalls(static_cast<int>(1 + rng() % 3), absl::UnavailableError("flaky"));
        return true;
      case 1:
        store_.LandNextWriteButFail(absl::DeadlineExceededError("answer lost"));
        return true;
      case 2:
        clock_.Advance(absl::Seconds(rng() % absl::ToInt64Seconds(max_pause)));
        return true;
      default:
        return false;
    }
  }
  // What a watch reports for `record`, and for a deletion.
  static LeaseEvent Seen(const LeaseRecord& record) { return {record, record.resource_version}; }
  LeaseEvent Deleted() { return {std::nullopt, store_.Delete()}; }

  FakeClock clock_;
  FakeLeaseStore store_;
  RecordingListener listener_;
  std::unique_ptr<Elector> elector_;
};

// --- Acquiring -------------------------------------------------------------

TEST_F(ElectorTest, WithNoHistoryWaitsTwoRetryPeriodsBeforeCreating) {
  // The first observation is "no Lease": a leader may just have lost a
  // deleted one, and a candidate that saw it vanish must get to recreate it
  // (with a higher token) first. It does so at once, so two retry periods
  // (a poll, stretched by jitter, and its write) are enough.
  elector_->SetWatchAvailable(true);
  ASSERT_EQ(Elector::kNoHistoryCreateDelay, 2);
  EXPECT_EQ(elector_->Step(), Now() + 2 * kRetryPeriod);
  EXPECT_FALSE(store_.Current().has_value());
  clock_.Advance(2 * kRetryPeriod - absl::Milliseconds(1));
  elector_->Step();
  EXPECT_FALSE(store_.Current().has_value());

  clock_.Advance(absl::Milliseconds(1));
  const MonoTime start = Now();
  elector_->Step();

  const LeaseRecord lease = *store_.Current();
  EXPECT_EQ(lease.holder_identity, "me");
  EXPECT_EQ(lease.lease_duration_seconds, 15);
  EXPECT_EQ(lease.acquire_time, Wall());
  EXPECT_EQ(lease.renew_time, Wall());
  EXPECT_EQ(lease.lease_transitions, 0);

  // Created over "no Lease", which may hide a term that came and went
  // unseen: it holds the Lease at once, but leads only once such a term's
  // promises have lapsed.
  const absl::Duration wait = UnseenPromiseBound(kRenewDeadline);
  EXPECT_FALSE(elector_->Snapshot().IsLeader(Now()));
  EXPECT_TRUE(listener_.acquired.empty());
  MonoTime wake = elector_->Step();
  while (wake < start + wait) {
    EXPECT_FALSE(IsLeader());
    clock_.Advance(wake - Now());
    wake = elector_->Step();
  }
  EXPECT_EQ(wake, start + wait) << "a step when the term may lead, to publish it";
  clock_.Advance(wake - Now());
  elector_->Step();

  const Leadership l = elector_->Snapshot();
  EXPECT_TRUE(l.IsLeader(Now()));
  EXPECT_EQ(l.fencing_token, 0);
  EXPECT_EQ(l.leader_until, Now() + kRenewDeadline);
  EXPECT_EQ(l.holder_identity, "me");
  EXPECT_EQ(l.lease_uid, lease.uid);
  EXPECT_TRUE(l.observed);
  EXPECT_THAT(listener_.acquired, ElementsAre(0));
}

TEST_F(ElectorTest, TakesAReleasedLeaseAtOnce) {
  SeeTermThenItsRelease(/*transitions=*/3);
  elector_->Step();
  EXPECT_EQ(Holder(), "me");
  EXPECT_EQ(store_.Current()->lease_transitions, 4);
  EXPECT_TRUE(IsLeader());
}

// What an elector may conclude from a Lease without a holder depends on what
// it saw before: only the release of the very term it last saw lets it lead
// at once. Anything else may hide a term it never saw (a Lease deleted and
// re-applied, events coalesced) whose holder may still be leading: it takes
// the Lease, which stops that holder from renewing, and leads only once a
// renew deadline (with drift) has passed since.
TEST_F(ElectorTest, ALeaseWithoutHolderThatIsNotAnObservedReleaseLeadsOnlyAfterUnseenPromises) {
  struct Case {
    std::string name;
    // Leaves the Lease without a holder in some way other than a release.
    std::function<void()> arrange;
  };
  // When the arrangement showed this elector another holder's term, whose
  // claim (a lease duration from then) the new term also waits out.
  std::optional<MonoTime> other_seen;
  auto see_other = [&] {
    SetLease("other", 15, 3);
    elector_->Step();
    other_seen = Now();
  };
  const std::vector<Case> cases = {
      {"first seen without a holder (no history)", [&] { SetLease("", 15, 3); }},
      {"re-applied without a holder after a deletion (replace --force, GitOps)",
       [&] {
         see_other();
         clock_.Advance(absl::Seconds(1));
         store_.Delete();
         SetLease("", 15, 0);  // the DELETED event coalesced away: only the new object
       }},
      {"holder cleared by an edit that is not a release (kubectl replace)",
       [&] {
         see_other();
         clock_.Advance(absl::Seconds(1));
         LeaseRecord edited = *store_.Current();
         edited.holder_identity.clear();
         edited.lease_transitions = 0;
         store_.Set(edited);
       }},
      {"a release of a term this elector never saw (transitions moved on)",
       [&] {
         see_other();
         clock_.Advance(absl::Seconds(1));
         LeaseRecord unseen = *store_.Current();
         unseen.holder_identity = "unseen";
         unseen.lease_transitions = 4;
         store_.Set(Released(store_.Set(unseen)));
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    store_.Delete();
    Reset(DefaultOptions());
    other_seen.reset();
    c.arrange();
    elector_->Step();  // sees the Lease without a holder, and takes it
    const MonoTime taken = Now();
    EXPECT_EQ(Holder(), "me");
    MonoTime leads = taken + UnseenPromiseBound(kRenewDeadline);
    if (other_seen) leads = std::max(leads, *other_seen + kLeaseDuration);
    for (; Now() < leads; clock_.Advance(std::min(absl::Milliseconds(500), leads - Now()))) {
      elector_->Step();
      ASSERT_FALSE(IsLeader()) << "leads while an unseen term could still be promised";
    }
    elector_->Step();
    EXPECT_TRUE(IsLeader()) << "does not lead once every unseen promise has lapsed";
  }
}

TEST_F(ElectorTest, DoesNotTakeFreshlyObservedForeignLease) {
  SetLease("other");
  elector_->Step();
  EXPECT_EQ(Holder(), "other");
  EXPECT_EQ(store_.Calls(Verb::kUpdate), 0);
  const Leadership l = elector_->Snapshot();
  EXPECT_FALSE(l.IsLeader(Now()));
  EXPECT_EQ(l.holder_identity, "other");
  EXPECT_EQ(l.fencing_token, 3);
}

// The record's leaseDurationSeconds, but never less than our own lease
// duration: a third party may have cut the record after its holder promised
// more, and an elector that did not see the term before the edit (a new
// member, a restarted one) cannot tell.
TEST_F(ElectorTest, ExpiryIsTheLongerOfTheRecordsDurationAndOursFromTheObservedTime) {
  struct Case {
    std::string name;
    int32_t record_seconds;  // the local flag is 15s
    absl::Duration wait;
  };
  for (const Case& c : {Case{"cut to 1s before this member first saw it", 1, kLeaseDuration},
                        Case{"shorter than the local flag", 5, kLeaseDuration},
                        Case{"longer", 30, absl::Seconds(30)}}) {
    SCOPED_TRACE(c.name);
    store_.Delete();
    Reset(DefaultOptions());
    SetLease("other", c.record_seconds);
    elector_->Step();  // first observation
    const absl::Duration record_duration = c.wait;

    clock_.Advance(record_duration - absl::Milliseconds(1));
    elector_->Step();
    EXPECT_EQ(Holder(), "other") << "taken before the record's duration had passed";

    clock_.Advance(absl::Milliseconds(1));
    elector_->Step();
    EXPECT_EQ(Holder(), "me") << "not taken once the record's duration had passed";
  }
}

TEST_F(ElectorTest, ExpiryCountsFromTheLastObservedChange) {
  SetLease("other");
  elector_->Step();
  clock_.Advance(absl::Seconds(10));
  RenewForeign();
  elector_->Step();  // sees the renew: the 15s start again now
  clock_.Advance(absl::Seconds(14));
  elector_->Step();
  EXPECT_EQ(Holder(), "other");
  clock_.Advance(absl::Seconds(1));
  elector_->Step();
  EXPECT_EQ(Holder(), "me");
}

TEST_F(ElectorTest, WallClockNeverDecidesExpiry) {
  struct Case {
    std::string name;
    absl::Duration renew_time_age;  // how old the record's renewTime is when first read
    absl::Duration wall_skew;       // then the local wall clock jumps by this
  };
  const std::vector<Case> cases = {
      {"stale renewTime", absl::Minutes(10), absl::ZeroDuration()},
      {"local wall clock far ahead", absl::ZeroDuration(), absl::Hours(24 * 365)},
      {"local wall clock far behind", absl::ZeroDuration(), -absl::Hours(24 * 365)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    store_.Delete();
    Reset(DefaultOptions());
    LeaseRecord r;
    r.holder_identity = "other";
    r.lease_duration_seconds = 15;
    r.acquire_time = r.renew_time = Wall() - c.renew_time_age;
    store_.Set(r);
    elector_->Step();
    clock_.SetWall(Wall() + c.wall_skew);

    clock_.Advance(absl::Seconds(14));
    elector_->Step();
    EXPECT_EQ(Holder(), "other");
    clock_.Advance(absl::Seconds(1));
    elector_->Step();
    EXPECT_EQ(Holder(), "me");
  }
}

TEST_F(ElectorTest, LeaseOfEarlierProcessWithSameIdentityIsWaitedOutThenTakenOver) {
  SetLease("me", /*duration_seconds=*/15, /*transitions=*/3);
  elector_->Step();
  EXPECT_FALSE(IsLeader());
  EXPECT_EQ(store_.Calls(Verb::kUpdate), 0);
  clock_.Advance(kLeaseDuration);
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 4);
  EXPECT_EQ(store_.Current()->acquire_time, Wall());
}

TEST_F(ElectorTest, TakeoverBumpsTransitionsAndSetsAcquireTime) {
  SetLease("other", /*duration_seconds=*/30, /*transitions=*/7);
  const LeaseRecord before = *store_.Current();
  elector_->Step();
  clock_.Advance(absl::Seconds(30));
  elector_->Step();

  const LeaseRecord after = *store_.Current();
  EXPECT_EQ(after.holder_identity, "me");
  EXPECT_EQ(after.lease_transitions, 8);
  EXPECT_EQ(after.acquire_time, Wall());
  EXPECT_EQ(after.renew_time, Wall());
  EXPECT_NE(after.acquire_time, before.acquire_time);
  EXPECT_EQ(after.lease_duration_seconds, 15) << "the holder writes its own promise";
  EXPECT_EQ(elector_->Snapshot().fencing_token, 8);
  EXPECT_THAT(listener_.acquired, ElementsAre(8));
}

TEST_F(ElectorTest, ConflictOnTakeoverRereadsAndFollowsTheWinner) {
  // A rival candidate whose takeover lands just before ours.
  Elector rival(DefaultOptions("rival"), &clock_, &store_);
  class RivalWritesFirst final : public LeaseStore {
   public:
    RivalWritesFirst(FakeLeaseStore* inner, Elector* rival) : inner_(inner), rival_(rival) {}
    absl::StatusOr<LeaseRecord> Get() override { return inner_->Get(); }
    absl::StatusOr<LeaseRecord> Create(const LeaseRecord& r) override { return inner_->Create(r); }
    absl::StatusOr<LeaseRecord> Update(const LeaseRecord& r) override {
      rival_->Step();
      return inner_->Update(r);
    }

   private:
    FakeLeaseStore* inner_;
    Elector* rival_;
  } racing(&store_, &rival);
  Reset(DefaultOptions(), &racing);

  SetLease("other", /*duration_seconds=*/15, /*transitions=*/3);
  elector_->Step();
  rival.Step();
  clock_.Advance(kLeaseDuration);
  const int updates_before = store_.Calls(Verb::kUpdate);
  const int gets_before = store_.Calls(Verb::kGet);
  elector_->Step();

  EXPECT_EQ(Holder(), "rival");
  EXPECT_EQ(store_.Current()->lease_transitions, 4);
  EXPECT_TRUE(rival.Snapshot().IsLeader(Now()));
  EXPECT_FALSE(IsLeader());
  EXPECT_EQ(elector_->Snapshot().holder_identity, "rival") << "the re-read shows the winner";
  // The rival's takeover and ours, which conflicted: no blind retry.
  EXPECT_EQ(store_.Calls(Verb::kUpdate) - updates_before, 2);
  // Our read, the rival's read and our re-read after the conflict.
  EXPECT_EQ(store_.Calls(Verb::kGet) - gets_before, 3);
}

TEST_F(ElectorTest, CreateConflictRereadsAndFollows) {
  class CreatedMeanwhile final : public LeaseStore {
   public:
    explicit CreatedMeanwhile(FakeLeaseStore* inner) : inner_(inner) {}
    absl::StatusOr<LeaseRecord> Get() override { return inner_->Get(); }
    absl::StatusOr<LeaseRecord> Create(const LeaseRecord& r) override {
      LeaseRecord theirs = r;
      theirs.holder_identity = "other";
      inner_->Set(theirs);
      return inner_->Create(r);
    }
    absl::StatusOr<LeaseRecord> Update(const LeaseRecord& r) override { return inner_->Update(r); }

   private:
    FakeLeaseStore* inner_;
  } racing(&store_);
  Reset(DefaultOptions(), &racing);
  WaitOutNoHistory();
  elector_->Step();
  EXPECT_EQ(Holder(), "other");
  EXPECT_FALSE(IsLeader());
  EXPECT_EQ(elector_->Snapshot().holder_identity, "other");
  EXPECT_EQ(store_.Calls(Verb::kGet), 3);
}

// --- Renewing --------------------------------------------------------------

TEST_F(ElectorTest, RenewChangesRenewTimeOnly) {
  Acquire();
  const int gets = store_.Calls(Verb::kGet);
  const LeaseRecord before = *store_.Current();
  clock_.Advance(kRetryPeriod);
  elector_->Step();
  const LeaseRecord after = *store_.Current();

  EXPECT_EQ(after.renew_time, Wall());
  EXPECT_NE(after.renew_time, before.renew_time);
  LeaseRecord expected = before;
  expected.renew_time = after.renew_time;
  expected.resource_version = after.resource_version;
  EXPECT_EQ(after, expected);
  EXPECT_EQ(store_.Calls(Verb::kGet), gets) << "the fast path renews without reading";
}

TEST_F(ElectorTest, LeaderUntilCountsFromWhenTheWriteWasSent) {
  SlowStore slow(&store_, &clock_, absl::Milliseconds(300));
  Reset(DefaultOptions(), &slow);
  Acquire();
  clock_.Advance(kRetryPeriod);
  const MonoTime renew_sent = Now();
  elector_->Step();
  EXPECT_EQ(Now(), renew_sent + absl::Milliseconds(300));
  EXPECT_EQ(elector_->Snapshot().leader_until, renew_sent + kRenewDeadline);
  ASSERT_FALSE(listener_.renews.empty());
  EXPECT_EQ(listener_.renews.back(), std::make_pair(absl::Milliseconds(300), true));
}

// A clock whose every wall reading is followed by `stall` of fake time, as
// when the reading thread is descheduled right after it on a loaded node; it
// remembers the monotonic time of each wall reading it gave.
class StallAfterWallReads final : public Clock {
 public:
  StallAfterWallReads(FakeClock* inner, absl::Duration stall) : inner_(inner), stall_(stall) {}
  MonoTime Monotonic() const override { return inner_->Monotonic(); }
  absl::Time Wall() const override {
    const MonoTime mono = inner_->Monotonic();
    const absl::Time wall = inner_->Wall();
    read_at_[wall] = mono;
    inner_->Advance(stall_);
    return wall;
  }
  bool AwaitUntil(absl::Mutex* mu, const absl::Condition& cond, MonoTime deadline) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return inner_->AwaitUntil(mu, cond, deadline);
  }
  // When the wall reading `wall` was taken.
  MonoTime ReadAt(absl::Time wall) const { return read_at_.at(wall); }

 private:
  FakeClock* inner_;
  absl::Duration stall_;
  mutable std::map<absl::Time, MonoTime> read_at_;
};

// Followers time a holder from the renewTime it wrote (timing.h): however
// long the holder's thread stalls after stamping it, the leadership a write
// grants counts from no later than the stamp.
TEST_F(ElectorTest, LeadershipCountsFromNoLaterThanTheRenewTimeWritten) {
  StallAfterWallReads stalling(&clock_, absl::Milliseconds(400));
  elector_ = std::make_unique<Elector>(DefaultOptions(), &stalling, &store_);
  Acquire();
  const MonoTime acquired_at = stalling.ReadAt(*store_.Current()->renew_time);
  EXPECT_LE(elector_->Snapshot().leader_until, acquired_at + kRenewDeadline);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(kRetryPeriod);
    elector_->Step();
    ASSERT_TRUE(IsLeader());
    const MonoTime stamped = stalling.ReadAt(*store_.Current()->renew_time);
    EXPECT_LE(elector_->Snapshot().leader_until, stamped + kRenewDeadline) << "renew " << i;
  }
}

TEST_F(ElectorTest, ConflictOnRenewRereadsAndRenewsWhenStillHolder) {
  Acquire();
  // Another client touches the object (say, a label) without taking it.
  store_.Set(*store_.Current());
  const int32_t transitions = store_.Current()->lease_transitions;
  clock_.Advance(kRetryPeriod);
  elector_->Step();

  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(elector_->Snapshot().leader_until, Now() + kRenewDeadline);
  EXPECT_EQ(store_.Current()->renew_time, Wall());
  EXPECT_EQ(store_.Current()->lease_transitions, transitions);
  EXPECT_EQ(store_.Calls(Verb::kUpdate), 2);  // fast path (409), then with the fresh version
  EXPECT_EQ(listener_.lost, 0);
}

TEST_F(ElectorTest, ConflictOnRenewRereadsAndStepsDownWhenSomeoneElseHolds) {
  Acquire();
  SetLease("other", /*duration_seconds=*/15, /*transitions=*/1);
  clock_.Advance(kRetryPeriod);
  elector_->Step();

  EXPECT_FALSE(IsLeader());
  const Leadership l = elector_->Snapshot();
  EXPECT_FALSE(l.holding);
  EXPECT_EQ(l.holder_identity, "other");
  EXPECT_EQ(Holder(), "other");
  EXPECT_EQ(store_.Calls(Verb::kUpdate), 1) << "only the failed fast-path renew";
  EXPECT_EQ(listener_.lost, 1);
}

TEST_F(ElectorTest, RenewFailureBeyondRenewDeadlineStepsDown) {
  Acquire();
  const MonoTime leader_until = elector_->Snapshot().leader_until;
  store_.FailNextCalls(1000, absl::UnavailableError("apiserver down"));

  // Failed renews keep the leader leading until the deadline.
  while (true) {
    const MonoTime wake = elector_->Step();
    ASSERT_LE(wake, leader_until) << "a leader must not sleep past its deadline";
    if (wake == leader_until) break;
    clock_.Advance(wake - Now());
    EXPECT_TRUE(IsLeader());
  }

  // Paused (or starved) until the deadline: the published answer is already
  // false, before any further I/O.
  const Leadership published = elector_->Snapshot();
  const int calls = store_.TotalCalls();
  clock_.Advance(leader_until - Now());
  EXPECT_FALSE(published.IsLeader(Now()));
  EXPECT_EQ(published.ValidFor(Now()), absl::ZeroDuration());
  EXPECT_EQ(store_.TotalCalls(), calls);

  elector_->Step();
  EXPECT_FALSE(elector_->Snapshot().holding);
  EXPECT_EQ(listener_.lost, 1);
}

TEST_F(ElectorTest, KeepsCampaigningAfterLosingLeadership) {
  Acquire();
  store_.FailNextCalls(1000, absl::UnavailableError("apiserver down"));
  clock_.Advance(kRenewDeadline);
  elector_->Step();
  ASSERT_FALSE(elector_->Snapshot().holding);

  // The API comes back and nobody else took the Lease: our term resumes.
  store_.FailNextCalls(0, absl::OkStatus());
  clock_.Advance(kRetryPeriod);
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 0) << "no other holder, same term";

  // Lost to someone else, it still competes for the next term.
  SetLease("other", /*duration_seconds=*/15, /*transitions=*/1);
  elector_->Step();
  EXPECT_FALSE(IsLeader());
  clock_.Advance(kLeaseDuration);
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 2);
}

TEST_F(ElectorTest, WriteThatLandedButReportedFailureIsHandledSafely) {
  struct Case {
    std::string name;
    bool start_as_leader;
    int32_t expected_token;
  };
  for (const Case& c : {Case{"renew", true, 0}, Case{"takeover", false, 4}}) {
    SCOPED_TRACE(c.name);
    store_.Delete();
    Reset(DefaultOptions());
    if (c.start_as_leader) {
      Acquire();
    } else {
      SeeTermThenItsRelease(/*transitions=*/3);
    }
    const MonoTime leader_until_before = elector_->Snapshot().leader_until;
    clock_.Advance(kRetryPeriod);
    store_.LandNextWriteButFail(absl::DeadlineExceededError("answer lost"));
    elector_->Step();

    // The write is in the Lease, but nothing was extended on its account.
    EXPECT_EQ(Holder(), "me");
    EXPECT_EQ(elector_->Snapshot().leader_until, leader_until_before);
    EXPECT_EQ(IsLeader(), c.start_as_leader);

    // The next step finds its own term and renews it: same token, no second
    // takeover.
    clock_.Advance(kRetryPeriod);
    elector_->Step();
    EXPECT_TRUE(IsLeader());
    EXPECT_EQ(elector_->Snapshot().fencing_token, c.expected_token);
    EXPECT_EQ(store_.Current()->lease_transitions, c.expected_token);
    EXPECT_EQ(elector_->Snapshot().leader_until, Now() + kRenewDeadline);
  }
}

// --- Scheduling ------------------------------------------------------------

TEST_F(ElectorTest, LeaderRenewsEveryRetryPeriodWithinJitterBounds) {
  struct Case {
    double jitter;
    absl::Duration period;
  };
  const std::vector<Case> cases = {{0.0, absl::Seconds(2)},
                                   {0.5, absl::Milliseconds(2200)},
                                   {1.0, absl::Milliseconds(2400)},
                                   {7.0, absl::Milliseconds(2400)},  // clamped
                                   {-1.0, absl::Seconds(2)}};        // clamped
  for (const Case& c : cases) {
    SCOPED_TRACE(c.jitter);
    store_.Delete();
    Elector::Options o = DefaultOptions();
    o.jitter = [j = c.jitter] { return j; };
    Reset(o);
    EXPECT_EQ(elector_->Step() - Now(), c.period);
    EXPECT_EQ(elector_->Step() - Now(), c.period);
  }
}

TEST_F(ElectorTest, DefaultJitterStaysWithinTwentyPercent) {
  Elector::Options o = DefaultOptions();
  o.jitter = nullptr;
  Reset(o);
  for (int i = 0; i < 200; ++i) {
    const absl::Duration period = elector_->Step() - Now();
    ASSERT_GE(period, kRetryPeriod);
    ASSERT_LE(period, kRetryPeriod * 1.2);
  }
}

TEST_F(ElectorTest, LeaderNeverWakesLaterThanLeaderUntil) {
  Elector::Options o = DefaultOptions();
  o.jitter = [] { return 1.0; };
  Reset(o);
  Acquire();
  const MonoTime leader_until = elector_->Snapshot().leader_until;
  store_.FailNextCalls(1000, absl::UnavailableError("apiserver down"));
  clock_.Advance(absl::Seconds(9));
  EXPECT_EQ(elector_->Step(), leader_until);
}

absl::Duration QuietWatch() { return Elector::kQuietWatchPeriods * kRetryPeriod; }

TEST_F(ElectorTest, FollowerWithWatchWakesAtTheExactExpiry) {
  elector_->SetWatchAvailable(true);
  SetLease("other", /*duration_seconds=*/20);
  EXPECT_EQ(elector_->Step(), Now() + QuietWatch());

  // Renews seen on the watch move the expiry and cost no read.
  const int gets = store_.Calls(Verb::kGet);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(kRetryPeriod);
    EXPECT_EQ(elector_->Observe(Seen(RenewForeign())), Now() + QuietWatch());
  }
  EXPECT_EQ(store_.Calls(Verb::kGet), gets);

  // The holder stops: once the watch is quiet the follower reads every
  // period, and takes the Lease at the exact expiry.
  const MonoTime expiry = Now() + absl::Seconds(20);
  clock_.Advance(QuietWatch());
  MonoTime wake = Now();
  while (Holder() == "other") {
    clock_.Advance(wake - Now());
    wake = elector_->Step();
    ASSERT_TRUE(Holder() == "me" || wake <= expiry);
  }
  EXPECT_EQ(Now(), expiry);
  EXPECT_EQ(store_.Calls(Verb::kGet), gets + 1 + (absl::Seconds(20) - QuietWatch()) / kRetryPeriod)
      << "one read as the watch went quiet, then one per retry period";
}

// A watch can stall with its connection open (a proxy, a half-dead
// connection): GETs work, events stop. A follower that slept on it until the
// expiry it last saw would read the holder's renews a lease duration late,
// and take over from a crashed holder up to two lease durations after its
// last renew.
TEST_F(ElectorTest, AFollowerWhoseWatchStallsStillTakesOverOneLeaseAfterTheLastRenew) {
  // The holder renews every retry period for a minute and then some, then
  // crashes; the watch delivers none of it. Every crash instant within a
  // lease duration, so that one falls just after the follower's read.
  for (absl::Duration renewing = absl::Minutes(1); renewing < absl::Minutes(1) + kLeaseDuration;
       renewing += absl::Seconds(1)) {
    SCOPED_TRACE(renewing);
    Reset(DefaultOptions());
    elector_->SetWatchAvailable(true);
    SetLease("other", /*duration_seconds=*/15);
    MonoTime wake = elector_->Step();
    const MonoTime crash = Now() + renewing;
    MonoTime last_renew = Now();
    MonoTime next_renew = Now() + kRetryPeriod;
    while (Holder() == "other") {
      const bool renews = next_renew < crash;
      clock_.Advance((renews ? std::min(wake, next_renew) : wake) - Now());
      if (renews && Now() == next_renew) {
        RenewForeign();
        last_renew = Now();
        next_renew += kRetryPeriod;
      }
      if (Now() >= wake) wake = elector_->Step();
    }
    EXPECT_GE(Now(), crash) << "took the Lease from a holder that kept renewing";
    EXPECT_LE(Now(), last_renew + kLeaseDuration + kRetryPeriod);
  }
}

TEST_F(ElectorTest, FollowerWithoutWatchPollsEveryRetryPeriod) {
  SetLease("other", /*duration_seconds=*/20);
  EXPECT_EQ(elector_->Step(), Now() + kRetryPeriod);
  clock_.Advance(kRetryPeriod);
  RenewForeign();
  EXPECT_EQ(elector_->Step(), Now() + kRetryPeriod);
}

TEST_F(ElectorTest, FollowerWithoutWatchWakesAtExpiryIfSoonerThanThePoll) {
  Elector::Options o = DefaultOptions();
  o.lease_duration = absl::Seconds(1);
  Reset(o);
  SetLease("other", /*duration_seconds=*/1);
  EXPECT_EQ(elector_->Step(), Now() + absl::Seconds(1));
}

TEST_F(ElectorTest, LosingTheWatchFallsBackToPolling) {
  elector_->SetWatchAvailable(true);
  SetLease("other", /*duration_seconds=*/20);
  EXPECT_EQ(elector_->Step(), Now() + QuietWatch());
  EXPECT_EQ(elector_->SetWatchAvailable(false), Now() + kRetryPeriod);
}

TEST_F(ElectorTest, ObservedReleaseWakesFollowerAtOnce) {
  elector_->SetWatchAvailable(true);
  SetLease("other");
  elector_->Step();
  clock_.Advance(absl::Seconds(3));
  LeaseRecord released = *store_.Current();
  released.holder_identity = "";
  released.lease_duration_seconds = 1;
  EXPECT_EQ(elector_->Observe(Seen(store_.Set(released))), Now());
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 4);
}

// Whoever held a deleted Lease can no longer renew: it is recreated at once,
// with a token above the vanished holder's, and the new term leads once every
// promise the vanished term can have made has lapsed.
TEST_F(ElectorTest, AnObservedDeletionIsRecreatedAtOnceAndLeadsAfterTheVanishedPromises) {
  elector_->SetWatchAvailable(true);
  SetLease("other", /*duration_seconds=*/20, /*transitions=*/3);
  elector_->Step();
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(elector_->Observe(Deleted()), Now());
  elector_->Step();
  EXPECT_EQ(Holder(), "me");
  EXPECT_EQ(store_.Current()->lease_transitions, 4);
  EXPECT_FALSE(IsLeader()) << "other may still be leading on its last renew";
  const MonoTime recreated = Now();
  Acquire();
  EXPECT_EQ(Now(), recreated + UnseenPromiseBound(kRenewDeadline));
}

TEST_F(ElectorTest, ObservingAnUnchangedRecordDoesNotMoveTheObservedTime) {
  elector_->SetWatchAvailable(true);
  SetLease("other");
  const MonoTime expiry = elector_->Step();
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(elector_->Observe(Seen(*store_.Current())), expiry);
}

TEST_F(ElectorTest, AWatchEventNeverEndsATermItOnlyBringsTheNextStepForward) {
  Acquire();
  const LeaseRecord theirs = SetLease("other", /*duration_seconds=*/15, /*transitions=*/1);
  EXPECT_EQ(elector_->Observe(Seen(theirs)), Now());
  EXPECT_TRUE(IsLeader()) << "the event may be stale; only our own read may end the term";

  // That step's renew conflicts, and its read ends the term.
  elector_->Step();
  EXPECT_FALSE(elector_->Snapshot().holding);
  EXPECT_EQ(listener_.lost, 1);
}

TEST_F(ElectorTest, LateWatchEventForTheVersionWeReplacedIsIgnored) {
  SeeTermThenItsRelease(/*transitions=*/3);
  const LeaseRecord theirs = *store_.Current();
  elector_->Step();
  ASSERT_TRUE(IsLeader());
  const MonoTime next = elector_->Observe(Seen(theirs));
  EXPECT_TRUE(IsLeader());
  EXPECT_GT(next, Now()) << "an event older than our own write is dropped";
}

// KEP-5504 allows resourceVersions up to 128 bits: past int64 they still
// order, by length and then digits, and an older event is still dropped.
TEST_F(ElectorTest, ResourceVersionsPastInt64StillOrderWatchEvents) {
  elector_->SetWatchAvailable(true);
  LeaseRecord held = SetLease("other");
  elector_->Step();
  LeaseRecord released = held;
  released.holder_identity = "";
  released.lease_duration_seconds = 1;
  released.resource_version = "18446744073709551616";  // 2^64
  held.resource_version = "18446744073709551617";
  const MonoTime wake = elector_->Observe(Seen(held));
  EXPECT_EQ(elector_->Observe(Seen(released)), wake) << "the older release is dropped";
  EXPECT_EQ(elector_->Observe(Seen(held)), wake) << "as is the same version again";
}

// --- Fencing tokens --------------------------------------------------------

TEST_F(ElectorTest, TokenStaysMonotonicAfterLeaseIsDeletedAndRecreated) {
  TakeOverReleased(/*transitions=*/5);

  store_.Delete();
  clock_.Advance(kRetryPeriod);
  elector_->Step();  // renew: NotFound; read: NotFound; create above what was seen
  Acquire();         // and lead once a term unseen meanwhile would have lapsed
  EXPECT_EQ(store_.Current()->lease_transitions, 7);
  EXPECT_EQ(elector_->Snapshot().fencing_token, 7);
  EXPECT_THAT(listener_.acquired, ElementsAre(6, 7));
}

TEST_F(ElectorTest, TokenStaysMonotonicWhenAnotherClientRecreatesTheLeaseFromZero) {
  TakeOverReleased(/*transitions=*/5);

  // A client-go elector recreates it from scratch, then disappears.
  store_.Delete();
  SetLease("go-controller", /*duration_seconds=*/15, /*transitions=*/0);
  elector_->Step();
  ASSERT_FALSE(IsLeader());
  clock_.Advance(kLeaseDuration);
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 7);
}

TEST_F(ElectorTest, FollowerReportsTheObservedTransitionsAsToken) {
  SetLease("other", /*duration_seconds=*/15, /*transitions=*/9);
  elector_->Step();
  EXPECT_EQ(elector_->Snapshot().fencing_token, 9);
}

TEST_F(ElectorTest, TokenIsNeverWrappedAtInt32Max) {
  SeeTermThenItsRelease(/*transitions=*/std::numeric_limits<int32_t>::max());
  const int updates = store_.Calls(Verb::kUpdate);
  elector_->Step();
  EXPECT_FALSE(IsLeader()) << "a new term could not get a higher token";
  EXPECT_EQ(store_.Current()->lease_transitions, std::numeric_limits<int32_t>::max());
  EXPECT_EQ(store_.Calls(Verb::kUpdate), updates);
}

TEST_F(ElectorTest, FencingRevisionIsTheResourceVersionOfTheWinningWrite) {
  TakeOverReleased(/*transitions=*/2);
  const LeaseRecord won = *store_.Current();
  EXPECT_EQ(elector_->Snapshot().fencing_revision, ResourceVersion::Parse(won.resource_version));

  // Renews write newer versions; the term's revision stays the winning one.
  clock_.Advance(kRetryPeriod);
  elector_->Step();
  EXPECT_NE(store_.Current()->resource_version, won.resource_version);
  EXPECT_EQ(elector_->Snapshot().fencing_revision, ResourceVersion::Parse(won.resource_version));
}

TEST_F(ElectorTest, FencingRevisionKeepsGrowingWhenLeaseTransitionsRestart) {
  TakeOverReleased(/*transitions=*/5);
  const std::optional<ResourceVersion> first = elector_->Snapshot().fencing_revision;
  ASSERT_TRUE(first.has_value());

  // Deleted, and every sidecar restarted: a new elector with no history.
  store_.Delete();
  Reset(DefaultOptions("me-again"));
  Acquire();
  EXPECT_EQ(elector_->Snapshot().fencing_token, 0) << "leaseTransitions restarted";
  EXPECT_GT(elector_->Snapshot().fencing_revision, *first);
}

// --- Vanished Leases and third-party edits (P4, P6) ------------------------

TEST_F(ElectorTest, APolledDeletionIsRecreatedAtOnceAndLeadsAfterTheVanishedPromises) {
  SetLease("other", /*duration_seconds=*/15, /*transitions=*/3);
  elector_->Step();
  clock_.Advance(absl::Seconds(10));
  store_.Delete();
  clock_.Advance(elector_->Step() - Now());  // the poll finds it gone
  if (!store_.Current()) clock_.Advance(elector_->Step() - Now());
  ASSERT_TRUE(store_.Current().has_value());
  EXPECT_EQ(Holder(), "me");
  EXPECT_EQ(store_.Current()->lease_transitions, 4) << "above the vanished holder's token";
  EXPECT_FALSE(IsLeader());
  Acquire();
}

// Its own Lease deleted, a leader cannot know whether someone re-applied it,
// held it and saw it deleted in turn: it stops leading, recreates the Lease at
// once with the next token, and leads again once such a term's promises
// would have lapsed. Its own earlier promises stand; others' waits cover them.
TEST_F(ElectorTest, ALeaderWhoseLeaseIsDeletedRecreatesItAtOnceAndLeadsAfterUnseenPromises) {
  TakeOverReleased(/*transitions=*/5);
  store_.Delete();
  clock_.Advance(kRetryPeriod);
  elector_->Step();
  EXPECT_FALSE(IsLeader());
  EXPECT_EQ(Holder(), "me");
  EXPECT_EQ(store_.Current()->lease_transitions, 7);
  const MonoTime recreated = Now();
  Acquire();
  EXPECT_EQ(Now(), recreated + UnseenPromiseBound(kRenewDeadline));
  EXPECT_EQ(elector_->Snapshot().fencing_token, 7);
}

// The case above, as it breaks P2 if the leader kept leading: its Lease is
// deleted and re-applied without a holder, another member takes the new
// object (and waits, since it may hide a term), the new object is deleted
// too, and only then does the first leader look.
TEST_F(ElectorTest, ALeaseReappliedTakenAndDeletedBehindALeadersBackLeavesNoOverlap) {
  TakeOverReleased(/*transitions=*/5);
  Elector other(DefaultOptions("b"), &clock_, &store_);
  store_.Delete();
  LeaseRecord reapplied;
  reapplied.lease_duration_seconds = 15;
  store_.Set(reapplied);
  other.Step();  // takes the re-applied Lease; leads only after the wait
  ASSERT_EQ(store_.Current()->holder_identity, "b");
  store_.Delete();
  clock_.Advance(kRetryPeriod);
  elector_->Step();  // recreates it
  for (int i = 0; i < 40; ++i) {
    clock_.Advance(absl::Milliseconds(500));
    ASSERT_FALSE(IsLeader() && other.Snapshot().IsLeader(Now())) << "two leaders at " << i;
    if (i % 3 == 0) other.Step();
    if (i % 4 == 0) elector_->Step();
  }
}

TEST_F(ElectorTest, ACutLeaseDurationDoesNotShortenAFollowersWait) {
  elector_->SetWatchAvailable(true);
  SetLease("other", /*duration_seconds=*/15, /*transitions=*/3);
  elector_->Step();
  const MonoTime expiry = Now() + absl::Seconds(15);

  // A third party edits the same term down to one second; the holder goes
  // quiet. The follower reads the Lease as the watch falls quiet, and does
  // not take it before its last renew's 15 s.
  clock_.Advance(absl::Seconds(2));
  LeaseRecord cut = *store_.Current();
  cut.lease_duration_seconds = 1;
  MonoTime wake = elector_->Observe(Seen(store_.Set(cut)));
  while (wake < expiry) {
    clock_.Advance(wake - Now());
    wake = elector_->Step();
    ASSERT_EQ(Holder(), "other") << "other's last renew promised 15s";
  }
}

TEST_F(ElectorTest, ALeaderPutsBackACutLeaseDurationAtOnce) {
  elector_->SetWatchAvailable(true);
  Acquire();
  LeaseRecord cut = *store_.Current();
  cut.lease_duration_seconds = 1;
  EXPECT_EQ(elector_->Observe(Seen(store_.Set(cut))), Now()) << "renew at once";
  EXPECT_TRUE(IsLeader());
  elector_->Step();
  EXPECT_EQ(store_.Current()->lease_duration_seconds, 15);
  EXPECT_EQ(store_.Current()->holder_identity, "me");
}

TEST_F(ElectorTest, LeaderUntilNeverExceedsWhatTheWrittenDurationGrants) {
  // A renew deadline the flags would refuse: the engine still caps
  // leadership at what followers grant (timing.h).
  Elector::Options o = DefaultOptions();
  o.lease_duration = absl::Seconds(2);
  o.renew_deadline = absl::Milliseconds(1500);
  o.retry_period = absl::Milliseconds(250);
  Reset(o);
  SeeTermThenItsRelease(/*transitions=*/0);
  const MonoTime sent = Now();
  elector_->Step();
  ASSERT_TRUE(IsLeader());
  EXPECT_EQ(elector_->Snapshot().leader_until, sent + SafeLeadershipFor(absl::Seconds(2)));
  EXPECT_LT(SafeLeadershipFor(absl::Seconds(2)), absl::Seconds(1));
}

// --- Release and resign ----------------------------------------------------

TEST_F(ElectorTest, ReleaseWritesExactlyTheReleaseFields) {
  TakeOverReleased(/*transitions=*/3);
  clock_.Advance(absl::Seconds(1));
  const LeaseRecord held = *store_.Current();
  elector_->Release();

  const LeaseRecord released = *store_.Current();
  LeaseRecord expected = held;
  expected.holder_identity = "";
  expected.lease_duration_seconds = 1;
  expected.acquire_time = expected.renew_time = Wall();
  expected.resource_version = released.resource_version;
  EXPECT_EQ(released, expected);
  EXPECT_EQ(released.lease_transitions, 4);

  const Leadership l = elector_->Snapshot();
  EXPECT_FALSE(l.holding);
  EXPECT_FALSE(l.IsLeader(Now()));
  EXPECT_EQ(listener_.lost, 1);
  EXPECT_THAT(listener_.lost_reasons, ElementsAre("shutdown"));
  EXPECT_EQ(listener_.released, 1);
}

TEST_F(ElectorTest, ReleaseSkippedWhenAFreshReadShowsAnotherHolder) {
  Acquire();
  const LeaseRecord theirs = SetLease("successor", /*duration_seconds=*/15, /*transitions=*/1);
  const int updates = store_.Calls(Verb::kUpdate);
  const int gets = store_.Calls(Verb::kGet);
  elector_->Release();
  EXPECT_EQ(listener_.released, 0);
  EXPECT_EQ(*store_.Current(), theirs);
  EXPECT_EQ(store_.Calls(Verb::kUpdate), updates);
  EXPECT_EQ(store_.Calls(Verb::kGet), gets + 1) << "the fresh read before releasing";
}

TEST_F(ElectorTest, ReleaseUsesTheFreshReadsResourceVersion) {
  Acquire();
  store_.Set(*store_.Current());  // another client touched the object
  elector_->Release();
  EXPECT_EQ(Holder(), "");
  EXPECT_EQ(store_.Calls(Verb::kUpdate), 1) << "no conflict, no retry";
}

TEST_F(ElectorTest, ReleaseOfATermLeftByAFailedRenew) {
  Acquire();
  store_.FailNextCalls(1000, absl::UnavailableError("apiserver down"));
  clock_.Advance(kRenewDeadline);
  elector_->Step();
  ASSERT_FALSE(elector_->Snapshot().holding);
  store_.FailNextCalls(0, absl::OkStatus());
  elector_->Release();
  EXPECT_EQ(Holder(), "");
}

TEST_F(ElectorTest, ReleaseDisabledLeavesTheLeaseToExpire) {
  Elector::Options o = DefaultOptions();
  o.release_on_shutdown = false;
  Reset(o);
  Acquire();
  const int calls = store_.TotalCalls();
  elector_->Release();
  EXPECT_EQ(Holder(), "me");
  EXPECT_EQ(store_.TotalCalls(), calls);
  EXPECT_FALSE(IsLeader());
}

TEST_F(ElectorTest, ReleaseByACandidateThatNeverWroteMakesNoCalls) {
  SetLease("other");
  elector_->Step();
  const int calls = store_.TotalCalls();
  elector_->Release();
  EXPECT_EQ(store_.TotalCalls(), calls);
  EXPECT_EQ(Holder(), "other");
}

TEST_F(ElectorTest, ResignReleasesAndWaitsOneLeaseDurationBeforeTakingItBack) {
  elector_->SetWatchAvailable(true);
  Acquire();
  const MonoTime resigned = Now();
  const MonoTime wake = elector_->Resign();
  EXPECT_EQ(Holder(), "");
  EXPECT_FALSE(IsLeader());
  EXPECT_EQ(wake, resigned + kLeaseDuration);

  const int updates = store_.Calls(Verb::kUpdate);
  clock_.Advance(kLeaseDuration - absl::Milliseconds(1));
  elector_->Step();
  EXPECT_EQ(Holder(), "");
  EXPECT_EQ(store_.Calls(Verb::kUpdate), updates);

  clock_.Advance(absl::Milliseconds(1));
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 1);
}

TEST_F(ElectorTest, ResignCampaignsNormallyOnceAnotherHolderHasAcquired) {
  elector_->SetWatchAvailable(true);
  Acquire();
  elector_->Resign();
  clock_.Advance(absl::Seconds(1));
  elector_->Observe(Seen(SetLease("other", /*duration_seconds=*/15, /*transitions=*/1)));

  // The other holder releases it in turn: free again, taken at once.
  EXPECT_EQ(elector_->Observe(Seen(store_.Set(Released(*store_.Current())))), Now());
  elector_->Step();
  EXPECT_TRUE(IsLeader());
  EXPECT_EQ(store_.Current()->lease_transitions, 2);
}

TEST_F(ElectorTest, ResignCampaignsOnceTheTransitionsShowATermItNeverSawHeld) {
  elector_->SetWatchAvailable(true);
  Acquire();
  elector_->Resign();
  clock_.Advance(absl::Seconds(1));
  // Another member took the Lease and released it again between two records
  // this one saw (a watch under load coalesces them): only the count of
  // transitions tells that another term began.
  LeaseRecord released = *store_.Current();
  released.lease_transitions = 1;
  EXPECT_EQ(elector_->Observe(Seen(store_.Set(released))), Now());
  elector_->Step();
  EXPECT_EQ(Holder(), elector_->Snapshot().identity);
  EXPECT_EQ(store_.Current()->lease_transitions, 2);
}

TEST_F(ElectorTest, ResignWhenNotHoldingDoesNothing) {
  SetLease("other");
  elector_->Step();
  const int calls = store_.TotalCalls();
  elector_->Resign();
  EXPECT_EQ(store_.TotalCalls(), calls);
}

// --- Health and listener ---------------------------------------------------

TEST_F(ElectorTest, HealthTracksApiContactAndTheNextStep) {
  EXPECT_FALSE(elector_->Health().last_api_contact.has_value());
  const MonoTime wake = elector_->Step();
  const MonoTime contact = Now();
  EXPECT_EQ(elector_->Health().last_api_contact, contact);
  EXPECT_EQ(elector_->Health().next_step, wake);

  store_.FailNextCalls(1, absl::UnavailableError("down"));
  clock_.Advance(kRetryPeriod);
  elector_->Step();
  EXPECT_EQ(elector_->Health().last_api_contact, contact);

  const ElectionHealth h = elector_->Health();
  EXPECT_FALSE(h.Overdue(h.next_step + absl::Seconds(1), absl::Seconds(1)));
  EXPECT_TRUE(h.Overdue(h.next_step + absl::Seconds(2), absl::Seconds(1)));
}

TEST_F(ElectorTest, ListenerHearsRenewsAcquisitionsLossesAndHolders) {
  Acquire();
  listener_.renews.clear();  // those while the new term waited to lead
  clock_.Advance(kRetryPeriod);
  store_.FailNextCalls(1, absl::UnavailableError("down"));
  elector_->Step();
  clock_.Advance(kRetryPeriod);
  elector_->Step();
  SetLease("other", /*duration_seconds=*/15, /*transitions=*/1);
  clock_.Advance(kRetryPeriod);
  elector_->Step();

  EXPECT_THAT(listener_.acquired, ElementsAre(0));
  EXPECT_EQ(listener_.lost, 1);
  ASSERT_EQ(listener_.renews.size(), 3u);
  EXPECT_FALSE(listener_.renews[0].second);
  EXPECT_TRUE(listener_.renews[1].second);
  EXPECT_FALSE(listener_.renews[2].second);  // the 409
  EXPECT_THAT(listener_.holders, ElementsAre("me", "other"));
  // Only the 409 sent the leader to re-read; the failed renew did not.
  EXPECT_EQ(listener_.slow_paths, 1);
  EXPECT_THAT(listener_.lost_reasons, ElementsAre("lease_changed_hands"));
  EXPECT_EQ(listener_.released, 0);
}

// --- Safety ----------------------------------------------------------------

// Three candidates on one Lease under random faults, interleavings and
// pauses: at no instant do two of them answer isLeader, and every new term's
// token is higher than the last.
TEST_F(ElectorTest, NeverTwoLeadersAndTokensIncreaseUnderRandomFaults) {
  std::mt19937 rng(20260917);  // NOLINT(bugprone-random-generator-seed): reproducible
  std::vector<std::unique_ptr<Elector>> electors;
  std::vector<MonoTime> wakes;
  for (const char* id : {"a", "b", "c"}) {
    Elector::Options o = DefaultOptions(id);
    o.listener = nullptr;
    o.jitter = [&rng] { return std::uniform_real_distribution<double>(0, 1)(rng); };
    electors.push_back(std::make_unique<Elector>(o, &clock_, &store_));
    wakes.push_back(Now());
  }
  int64_t last_token = -1;
  std::string last_leader;
  for (int round = 0; round < 5000; ++round) {
    const size_t i = rng() % electors.size();
    InjectFault(rng() % 10, rng, absl::Seconds(20));
    if (Now() >= wakes[i] || rng() % 4 == 0) wakes[i] = electors[i]->Step();
    clock_.Advance(absl::Milliseconds(rng() % 1500));

    int leaders = 0;
    for (const auto& e : electors) {
      const Leadership l = e->Snapshot();
      if (!l.IsLeader(Now())) continue;
      ++leaders;
      if (l.identity != last_leader) {
        EXPECT_GT(l.fencing_token, last_token) << "round " << round;
        last_leader = l.identity;
      }
      last_token = std::max(last_token, l.fencing_token);
    }
    ASSERT_LE(leaders, 1) << "round " << round;
  }
  EXPECT_GT(last_token, 0) << "leadership never changed hands: the test proves little";
}

// P1 and P2 against everything an operator or the machine can do to a group,
// including members that join or restart in the middle of it with no
// history: at every instant at most one elector leads, and none leads before
// every promise another one made (its leader_until while it led) has lapsed.
// Watch events reach each elector late, coalesced or not at all.
TEST_F(ElectorTest, NoElectorLeadsBeforeAnotherOnesPromiseLapsesWhateverHappensToTheLease) {
  for (uint32_t seed = 1; seed <= 16; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    store_.Delete();
    struct Member {
      std::unique_ptr<Elector> elector;
      // What the member's readers are told: the elector's snapshot, marked
      // while it steps down, as ElectionLoop publishes it.
      std::unique_ptr<LeadershipPublisher> publisher;
      MonoTime wake;
      std::optional<LeaseEvent> pending;  // the loop's keep-the-latest slot
      // Resigning: stepped down (the publisher's request), releases once its
      // promises have lapsed (the handshake of an application that does not
      // acknowledge), as the loop does, without stepping meanwhile.
      std::optional<MonoTime> resign_at;
      uint64_t step_down = 0;
    };
    std::vector<Member> members;
    int generation = 0;
    auto start_member = [&](size_t i) {
      Elector::Options o = DefaultOptions(absl::StrCat("m", i, "_", generation++));
      o.listener = nullptr;
      o.jitter = [&rng] { return std::uniform_real_distribution<double>(0, 1)(rng); };
      Member m{std::make_unique<Elector>(o, &clock_, &store_),
               std::make_unique<LeadershipPublisher>(Leadership()), Now(), std::nullopt,
               std::nullopt};
      m.elector->SetWatchAvailable(rng() % 2 == 0);
      if (i < members.size()) {
        members[i] = std::move(m);
      } else {
        members.push_back(std::move(m));
      }
    };
    for (size_t i = 0; i < 3; ++i) start_member(i);
    // Every identity's last promise: the leader_until of its last leader answer.
    absl::flat_hash_map<std::string, MonoTime> promised;
    auto broadcast = [&](const LeaseEvent& e) {
      for (Member& m : members) {
        if (rng() % 5 != 0) m.pending = e;  // sometimes the watch misses it
      }
    };
    int handovers = 0;
    std::string last_leader;
    for (int round = 0; round < 4000; ++round) {
      const size_t i = rng() % members.size();
      const uint32_t kind = rng() % 24;
      if (!InjectFault(kind, rng, absl::Seconds(12))) {
        switch (kind) {
          case 3:  // deleted
            if (store_.Current()) broadcast({std::nullopt, store_.Delete()});
            break;
          case 4: {  // deleted and re-applied without a holder
            if (store_.Current()) broadcast({std::nullopt, store_.Delete()});
            LeaseRecord fresh;
            fresh.lease_duration_seconds = 15;
            const LeaseRecord stored = store_.Set(fresh);
            broadcast({stored, stored.resource_version});
            break;
          }
          case 5:  // a third party cuts the duration of whatever term is there
            if (store_.Current()) {
              LeaseRecord cut = *store_.Current();
              cut.lease_duration_seconds = 1;
              const LeaseRecord stored = store_.Set(cut);
              broadcast({stored, stored.resource_version});
            }
            break;
          case 6:  // a member restarts (or a new Pod replaces it): no history
            start_member(i);
            break;
          case 7:
            if (!members[i].resign_at && members[i].elector->Snapshot().holding) {
              members[i].resign_at = members[i].elector->Snapshot().leader_until;
              members[i].step_down = members[i].publisher->StepDown();
            }
            break;
          default:
            break;
        }
      }
      Member& m = members[i];
      if (m.pending && rng() % 2 == 0) m.wake = m.elector->Observe(*std::exchange(m.pending, {}));
      const std::optional<LeaseRecord> before = store_.Current();
      if (m.resign_at) {
        if (Now() >= *m.resign_at) {
          m.resign_at.reset();
          m.wake = m.elector->Resign();
          m.publisher->EndStepDown(m.step_down);
        }
      } else if (Now() >= m.wake || rng() % 4 == 0) {
        m.wake = m.elector->Step();
      }
      if (store_.Current() != before) {
        broadcast({store_.Current(),
                   store_.Current() ? store_.Current()->resource_version : std::string()});
      }
      clock_.Advance(absl::Milliseconds(rng() % 1500));

      int leaders = 0;
      for (const Member& member : members) {
        member.publisher->Publish(member.elector->Snapshot());
        const Leadership l = member.publisher->Current().leadership;
        if (!l.IsLeader(Now())) continue;
        ++leaders;
        for (const auto& [identity, until] : promised) {
          if (identity == l.identity) continue;
          ASSERT_GE(Now(), until) << "round " << round << ": " << l.identity << " leads while "
                                  << identity << "'s promise runs";
        }
        promised[l.identity] = l.leader_until;
        if (l.identity != last_leader) ++handovers;
        last_leader = l.identity;
      }
      ASSERT_LE(leaders, 1) << "round " << round;
    }
    EXPECT_GT(handovers, 5) << "leadership hardly changed hands: the test proves little";
  }
}

}  // namespace
}  // namespace baton

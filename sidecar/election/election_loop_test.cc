// ElectionLoop on real threads. The first tests run on the real clock, with
// durations chosen so that each assertion has seconds of slack: they check
// what happens and in which order, never exact timings. The step-down
// handshake tests run on a FakeClock: the loop then moves only when the test
// advances time, so "not before the promise lapses" is exact.
#include "sidecar/election/election_loop.h"

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sidecar/common/clock.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/election/elector.h"
#include "sidecar/election/fake_lease_store.h"
#include "sidecar/election/leadership.h"

namespace baton {
namespace {

constexpr absl::Duration kPatience = absl::Seconds(20);

struct Timing {
  absl::Duration lease_duration;
  absl::Duration renew_deadline;
  absl::Duration retry_period;
};
// Renews often; a lost leader would be noticed quickly.
constexpr Timing kFast = {absl::Seconds(5), absl::Seconds(3), absl::Milliseconds(200)};
// Takeover by expiry would take 60s: anything sooner came through the watch.
// (A short renew deadline: the first leader, which takes a Lease it did not
// see released, waits about one before it leads.)
constexpr Timing kSlowExpiry = {absl::Seconds(60), absl::Seconds(5), absl::Milliseconds(500)};

// One sidecar's engine: elector, publisher and loop.
class Candidate {
 public:
  Candidate(const std::string& identity, LeaseStore* store, Timing timing,
            Clock* clock = SystemClock())
      : clock_(clock),
        elector_(Options(identity, timing), clock, store),
        publisher_(elector_.Snapshot()),
        loop_(&elector_, &publisher_) {}

  ElectionLoop& loop() { return loop_; }
  LeadershipPublisher& publisher() { return publisher_; }
  Leadership Current() const { return publisher_.Current().leadership; }

  // Waits until the published snapshot satisfies `pred`.
  bool WaitUntil(const std::function<bool(const Leadership&)>& pred) {
    // Patience is real time, whatever clock the candidate runs on.
    const Clock& real = *SystemClock();
    const MonoTime deadline = real.Monotonic() + kPatience;
    LeadershipPublisher::Versioned v = publisher_.Current();
    while (!pred(v.leadership)) {
      if (real.Monotonic() >= deadline) return false;
      v = publisher_.WaitForChange(v.version, deadline, real);
    }
    return true;
  }
  bool WaitUntilLeader() {
    return WaitUntil([this](const Leadership& l) { return l.IsLeader(clock_->Monotonic()); });
  }

 private:
  static Elector::Options Options(const std::string& identity, Timing timing) {
    Elector::Options o;
    o.identity = identity;
    o.lease_name = "lock";
    o.lease_namespace = "ns";
    o.lease_duration = timing.lease_duration;
    o.renew_deadline = timing.renew_deadline;
    o.retry_period = timing.retry_period;
    return o;
  }

  Clock* const clock_;
  Elector elector_;
  LeadershipPublisher publisher_;
  ElectionLoop loop_;
};

class ElectionLoopTest : public ::testing::Test {
 protected:
  // A Lease without a holder: taken at once (a candidate that finds no Lease
  // at all waits a lease duration first, and one that did not see it
  // released leads a renew deadline after taking it: the elector's
  // business).
  void SetUp() override {
    LeaseRecord released;
    released.lease_duration_seconds = 1;
    store_.Set(released);
  }
  // Feeds every change of the store to the candidates' loops, like a watch.
  void WatchFor(const std::vector<Candidate*>& candidates) {
    for (Candidate* c : candidates) c->loop().SetWatchAvailable(true);
    store_.SetWatcher([candidates](const LeaseEvent& event) {
      for (Candidate* c : candidates) c->loop().Observe(event);
    });
  }
  void TearDown() override { store_.SetWatcher(nullptr); }

  FakeLeaseStore store_;
};

TEST_F(ElectionLoopTest, AcquiresPublishesAndKeepsRenewing) {
  Candidate me("me", &store_, kFast);
  me.loop().Start();
  ASSERT_TRUE(me.WaitUntilLeader());
  EXPECT_EQ(me.Current().holder_identity, "me");

  const int updates = store_.Calls(FakeLeaseStore::Verb::kUpdate);
  ASSERT_TRUE(me.WaitUntil([&](const Leadership&) {
    return store_.Calls(FakeLeaseStore::Verb::kUpdate) >= updates + 3;
  }));
  EXPECT_TRUE(me.Current().IsLeader(SystemClock()->Monotonic()));
  EXPECT_TRUE(me.loop().Shutdown(kPatience));
}

TEST_F(ElectionLoopTest, ShutdownPublishesSteppingDownBeforeReleasing) {
  Candidate me("me", &store_, kFast);
  struct Seen {
    Leadership leadership;
    std::string holder_in_store;
  };
  absl::Mutex mu;
  std::vector<Seen> seen;
  me.publisher().Subscribe([&](const LeadershipPublisher::Versioned& v) {
    absl::MutexLock lock(&mu);
    seen.push_back({v.leadership, store_.Current() ? store_.Current()->holder_identity : ""});
  });
  me.loop().Start();
  ASSERT_TRUE(me.WaitUntilLeader());

  EXPECT_TRUE(me.loop().Shutdown(kPatience));

  EXPECT_EQ(store_.Current()->holder_identity, "");
  absl::MutexLock lock(&mu);
  size_t first_stepping_down = 0;
  while (first_stepping_down < seen.size() && !seen[first_stepping_down].leadership.stepping_down) {
    ++first_stepping_down;
  }
  ASSERT_LT(first_stepping_down, seen.size());
  EXPECT_EQ(seen[first_stepping_down].holder_in_store, "me")
      << "stepping down was published only after the Lease was released";
  for (size_t i = first_stepping_down; i < seen.size(); ++i) {
    EXPECT_TRUE(seen[i].leadership.stepping_down);
  }
  EXPECT_FALSE(seen.back().leadership.holding);
}

TEST_F(ElectionLoopTest, ReleaseReachesAWatchingFollowerLongBeforeExpiry) {
  Candidate leader("leader", &store_, kSlowExpiry);
  Candidate follower("follower", &store_, kSlowExpiry);
  WatchFor({&leader, &follower});
  leader.loop().Start();
  ASSERT_TRUE(leader.WaitUntilLeader());
  follower.loop().Start();
  ASSERT_TRUE(
      follower.WaitUntil([](const Leadership& l) { return l.holder_identity == "leader"; }));

  const absl::Time released = absl::Now();
  ASSERT_TRUE(leader.loop().Shutdown(kPatience));
  ASSERT_TRUE(follower.WaitUntilLeader());
  EXPECT_LT(absl::Now() - released, kSlowExpiry.lease_duration / 2);
  EXPECT_EQ(store_.Current()->lease_transitions, 2);
}

TEST_F(ElectionLoopTest, ResignHandsOverAndDoesNotTakeItBack) {
  Candidate first("first", &store_, kSlowExpiry);
  Candidate second("second", &store_, kSlowExpiry);
  WatchFor({&first, &second});
  first.loop().Start();
  ASSERT_TRUE(first.WaitUntilLeader());
  second.loop().Start();
  ASSERT_TRUE(second.WaitUntil([](const Leadership& l) { return l.holder_identity == "first"; }));

  EXPECT_TRUE(first.loop().Resign());
  EXPECT_FALSE(first.Current().IsLeader(SystemClock()->Monotonic()));
  ASSERT_TRUE(second.WaitUntilLeader());
  ASSERT_TRUE(first.WaitUntil([](const Leadership& l) { return l.holder_identity == "second"; }));
  EXPECT_FALSE(first.Current().holding);
  EXPECT_FALSE(first.Current().stepping_down) << "still campaigning";
  EXPECT_EQ(store_.Current()->lease_transitions, 2);
}

TEST_F(ElectionLoopTest, HealthShowsApiContactAndAFutureStep) {
  Candidate me("me", &store_, kFast);
  me.loop().Start();
  ASSERT_TRUE(me.WaitUntilLeader());
  ASSERT_TRUE(me.WaitUntil(
      [&](const Leadership&) { return me.loop().Health().last_api_contact.has_value(); }));
  EXPECT_FALSE(me.loop().Health().Overdue(SystemClock()->Monotonic(), kPatience));
}

TEST_F(ElectionLoopTest, DestroyingARunningLoopStepsDownWithoutReleasing) {
  auto me = std::make_unique<Candidate>("me", &store_, kFast);
  me->loop().Start();
  ASSERT_TRUE(me->WaitUntilLeader());
  me.reset();
  EXPECT_EQ(store_.Current()->holder_identity, "me");
}

TEST_F(ElectionLoopTest, ShutdownAndResignBeforeStartDoNothing) {
  Candidate me("me", &store_, kFast);
  EXPECT_FALSE(me.loop().Resign());
  EXPECT_TRUE(me.loop().Shutdown(absl::Milliseconds(10)));
  EXPECT_EQ(store_.TotalCalls(), 0);
}

// --- The step-down handshake, on a FakeClock -----------------------------

// A LeaseStore whose calls block while the gate is closed: the loop's thread
// stuck in a slow API call.
class GatedStore final : public LeaseStore {
 public:
  explicit GatedStore(LeaseStore* inner) : inner_(inner) {}
  void Close() {
    absl::MutexLock lock(&mu_);
    open_ = false;
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  // Calls waiting at the closed gate.
  int Waiting() {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }
  absl::StatusOr<LeaseRecord> Get() override {
    return Through([&] { return inner_->Get(); });
  }
  absl::StatusOr<LeaseRecord> Create(const LeaseRecord& r) override {
    return Through([&] { return inner_->Create(r); });
  }
  absl::StatusOr<LeaseRecord> Update(const LeaseRecord& r) override {
    return Through([&] { return inner_->Update(r); });
  }

 private:
  template <typename F>
  absl::StatusOr<LeaseRecord> Through(F call) {
    {
      absl::MutexLock lock(&mu_);
      ++waiting_;
      mu_.Await(absl::Condition(&open_));
      --waiting_;
    }
    return call();
  }
  LeaseStore* const inner_;
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

class StepDownHandshakeTest : public ElectionLoopTest {
 protected:
  // Starts a leader on the fake clock and waits until it leads.
  void StartLeader(Candidate* c) {
    c->loop().Start();
    ASSERT_TRUE(AdvanceUntil([&] { return c->Current().IsLeader(clock_.Monotonic()); },
                             2 * kFast.renew_deadline));
  }
  // Advances the fake clock in small steps until `done` holds (the loop
  // reacts on its own thread) or `limit` of fake time has passed.
  bool AdvanceUntil(const std::function<bool()>& done, absl::Duration limit) {
    for (absl::Duration d; d <= limit; d += absl::Milliseconds(50)) {
      if (WaitRealTime(done, absl::Milliseconds(20))) return true;
      clock_.Advance(absl::Milliseconds(50));
    }
    return WaitRealTime(done, absl::Milliseconds(200));
  }
  static bool WaitRealTime(const std::function<bool()>& done, absl::Duration patience) {
    const absl::Time deadline = absl::Now() + patience;
    while (!done()) {
      if (absl::Now() >= deadline) return false;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return true;
  }
  bool Released() const { return store_.Current() && store_.Current()->holder_identity.empty(); }

  FakeClock clock_;
};

TEST_F(StepDownHandshakeTest, ResignStopsAnsweringLeaderAtOnceEvenWhileTheLoopIsBlocked) {
  GatedStore gated(&store_);
  Candidate me("me", &gated, kFast, &clock_);
  StartLeader(&me);
  gated.Close();  // the next renew hangs in the store
  clock_.Advance(kFast.retry_period * 2);

  EXPECT_TRUE(me.loop().Resign());
  EXPECT_TRUE(me.Current().stepping_down);
  EXPECT_FALSE(
      me.publisher().Promise("app", clock_.Monotonic()).leadership().IsLeader(clock_.Monotonic()));
  gated.Open();
  EXPECT_TRUE(me.loop().Shutdown(kPatience));
}

// A Resign (or SIGTERM) that arrives while the loop is taking the Lease over
// finds nothing to step down from; the term that takeover wins must not say
// leader either.
TEST_F(StepDownHandshakeTest, ResignDuringATakeoverInFlightNeverAnswersLeader) {
  LeaseRecord theirs;
  theirs.holder_identity = "other";
  theirs.lease_duration_seconds = 5;
  store_.Set(theirs);
  GatedStore gated(&store_);
  // Declared before the candidate, so that they outlive its loop's thread.
  absl::Mutex mu;
  bool said_leader = false;
  Candidate me("me", &gated, kFast, &clock_);
  me.publisher().Subscribe([&](const LeadershipPublisher::Versioned& v) {
    absl::MutexLock lock(&mu);
    said_leader = said_leader || v.leadership.IsLeader(clock_.Monotonic());
  });
  me.loop().Start();
  ASSERT_TRUE(
      AdvanceUntil([&] { return me.Current().holder_identity == "other"; }, absl::Seconds(1)));
  gated.Close();  // the step at expiry hangs in the store, about to take over
  clock_.Advance(kFast.lease_duration);
  ASSERT_TRUE(WaitRealTime([&] { return gated.Waiting() == 1; }, absl::Seconds(5)));
  ASSERT_TRUE(me.loop().Resign());
  gated.Open();
  // The takeover lands, the term is stepped down at once and released.
  ASSERT_TRUE(AdvanceUntil([&] { return Released(); }, absl::Seconds(2)));
  EXPECT_GT(store_.Current()->lease_transitions, 0) << "the takeover happened";
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(said_leader);
  EXPECT_FALSE(
      me.publisher().Promise("app", clock_.Monotonic()).leadership().IsLeader(clock_.Monotonic()));
}

TEST_F(StepDownHandshakeTest, ResignReleasesOnlyOnceTheClientAcknowledges) {
  Candidate me("me", &store_, kFast, &clock_);
  StartLeader(&me);
  const MonoTime promised_until =
      me.publisher().Promise("app", clock_.Monotonic()).leadership().leader_until;
  const int64_t token = me.Current().fencing_token;

  ASSERT_TRUE(me.loop().Resign());
  // The promise runs for seconds more; nothing is released meanwhile.
  EXPECT_FALSE(AdvanceUntil([&] { return Released(); }, absl::Seconds(1)));
  ASSERT_LT(clock_.Monotonic(), promised_until);

  EXPECT_TRUE(me.publisher().Acknowledge({"app", token, promised_until}, clock_.Monotonic()));
  me.loop().PromisesChanged();
  EXPECT_TRUE(WaitRealTime([&] { return Released(); }, kPatience));
  EXPECT_LT(clock_.Monotonic(), promised_until) << "released before the promise lapsed";
  EXPECT_TRUE(me.loop().Shutdown(kPatience));
}

TEST_F(StepDownHandshakeTest, AnAnonymousPromiseHoldsTheReleaseUntilItLapses) {
  Candidate me("me", &store_, kFast, &clock_);
  StartLeader(&me);
  const MonoTime promised_until =
      me.publisher().Promise("", clock_.Monotonic()).leadership().leader_until;

  ASSERT_TRUE(me.loop().Resign());
  ASSERT_TRUE(AdvanceUntil([&] { return Released(); }, kFast.renew_deadline * 2));
  EXPECT_GE(clock_.Monotonic(), promised_until) << "released before the promise lapsed";
  EXPECT_TRUE(me.loop().Shutdown(kPatience));
}

TEST_F(StepDownHandshakeTest, AnAcknowledgementForAnotherTermDoesNotRelease) {
  Candidate me("me", &store_, kFast, &clock_);
  StartLeader(&me);
  me.publisher().Promise("app", clock_.Monotonic());
  const int64_t token = me.Current().fencing_token;

  ASSERT_TRUE(me.loop().Resign());
  EXPECT_FALSE(me.publisher().Acknowledge({"app", token - 1, std::nullopt}, clock_.Monotonic()));
  EXPECT_FALSE(
      me.publisher().Acknowledge({"someone-else", token, std::nullopt}, clock_.Monotonic()));
  me.loop().PromisesChanged();
  EXPECT_FALSE(AdvanceUntil([&] { return Released(); }, absl::Seconds(1)));
  EXPECT_TRUE(me.publisher().Acknowledge({"app", token, std::nullopt}, clock_.Monotonic()));
  EXPECT_TRUE(me.loop().Shutdown(kPatience));
}

TEST_F(StepDownHandshakeTest, ShutdownWhoseGraceEndsBeforeThePromiseExitsWithoutReleasing) {
  Candidate me("me", &store_, kFast, &clock_);
  StartLeader(&me);
  me.publisher().Promise("", clock_.Monotonic());

  // Whether Shutdown sees the thread end exactly at its deadline is a race
  // the test does not care about; what matters is that nothing is released.
  std::thread stopper([&] { me.loop().Shutdown(absl::Seconds(1)); });
  ASSERT_TRUE(WaitRealTime([&] { return me.Current().stepping_down; }, kPatience));
  EXPECT_FALSE(AdvanceUntil([&] { return Released(); }, absl::Seconds(2)));
  stopper.join();
  EXPECT_EQ(store_.Current()->holder_identity, "me") << "a promise was still outstanding";
}

TEST_F(StepDownHandshakeTest, ShutdownWithEveryPromiseAcknowledgedReleasesAtOnce) {
  Candidate me("me", &store_, kFast, &clock_);
  StartLeader(&me);
  me.publisher().Promise("app", clock_.Monotonic());
  ASSERT_TRUE(me.publisher().Acknowledge({"app", me.Current().fencing_token, std::nullopt},
                                         clock_.Monotonic()));

  EXPECT_TRUE(me.loop().Shutdown(kPatience));
  EXPECT_TRUE(Released());
}

}  // namespace
}  // namespace baton

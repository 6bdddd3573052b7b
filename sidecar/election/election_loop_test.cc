// ElectionLoop on real threads and the real clock, with durations chosen so
// that each assertion has seconds of slack: the tests check what happens and
// in which order, never exact timings.
#include "sidecar/election/election_loop.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sidecar/common/clock.h"
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
constexpr Timing kSlowExpiry = {absl::Seconds(60), absl::Seconds(40), absl::Milliseconds(500)};

// One sidecar's engine: elector, publisher and loop.
class Candidate {
 public:
  Candidate(const std::string& identity, LeaseStore* store, Timing timing)
      : elector_(Options(identity, timing), SystemClock(), store),
        publisher_(elector_.Snapshot()),
        loop_(&elector_, &publisher_) {}

  ElectionLoop& loop() { return loop_; }
  LeadershipPublisher& publisher() { return publisher_; }
  Leadership Current() const { return publisher_.Current().leadership; }

  // Waits until the published snapshot satisfies `pred`.
  bool WaitUntil(const std::function<bool(const Leadership&)>& pred) {
    const absl::Time deadline = absl::Now() + kPatience;
    LeadershipPublisher::Versioned v = publisher_.Current();
    while (!pred(v.leadership)) {
      if (absl::Now() >= deadline) return false;
      v = publisher_.WaitForChange(v.version, deadline);
    }
    return true;
  }
  bool WaitUntilLeader() {
    return WaitUntil([](const Leadership& l) { return l.IsLeader(SystemClock()->Monotonic()); });
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

  Elector elector_;
  LeadershipPublisher publisher_;
  ElectionLoop loop_;
};

class ElectionLoopTest : public ::testing::Test {
 protected:
  // Feeds every change of the store to the candidates' loops, like a watch.
  void WatchFor(const std::vector<Candidate*>& candidates) {
    for (Candidate* c : candidates) c->loop().SetWatchAvailable(true);
    store_.SetWatcher([candidates](const std::optional<LeaseRecord>& lease) {
      for (Candidate* c : candidates) c->loop().Observe(lease);
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
  EXPECT_EQ(store_.Current()->lease_transitions, 1);
}

TEST_F(ElectionLoopTest, ResignHandsOverAndDoesNotTakeItBack) {
  Candidate first("first", &store_, kSlowExpiry);
  Candidate second("second", &store_, kSlowExpiry);
  WatchFor({&first, &second});
  first.loop().Start();
  ASSERT_TRUE(first.WaitUntilLeader());
  second.loop().Start();
  ASSERT_TRUE(second.WaitUntil([](const Leadership& l) { return l.holder_identity == "first"; }));

  EXPECT_TRUE(first.loop().Resign(kPatience));
  EXPECT_FALSE(first.Current().IsLeader(SystemClock()->Monotonic()));
  ASSERT_TRUE(second.WaitUntilLeader());
  ASSERT_TRUE(first.WaitUntil([](const Leadership& l) { return l.holder_identity == "second"; }));
  EXPECT_FALSE(first.Current().holding);
  EXPECT_FALSE(first.Current().stepping_down) << "still campaigning";
  EXPECT_EQ(store_.Current()->lease_transitions, 1);
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
  EXPECT_FALSE(me.loop().Resign(absl::Milliseconds(10)));
  EXPECT_TRUE(me.loop().Shutdown(absl::Milliseconds(10)));
  EXPECT_EQ(store_.TotalCalls(), 0);
}

}  // namespace
}  // namespace baton

#include "sidecar/election/leadership.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"

namespace baton {
namespace {

Leadership Holding(MonoTime until) {
  Leadership l;
  l.identity = "me";
  l.holder_identity = "me";
  l.holding = true;
  l.leader_until = until;
  return l;
}

TEST(LeadershipTest, IsLeaderOnlyBeforeLeaderUntil) {
  FakeClock clock;
  Leadership l = Holding(clock.Monotonic() + absl::Seconds(10));
  EXPECT_TRUE(l.IsLeader(clock.Monotonic()));
  EXPECT_EQ(l.ValidFor(clock.Monotonic()), absl::Seconds(10));
  clock.Advance(absl::Seconds(10));
  EXPECT_FALSE(l.IsLeader(clock.Monotonic()));
  EXPECT_EQ(l.ValidFor(clock.Monotonic()), absl::ZeroDuration());
}

TEST(LeadershipTest, SteppingDownIsNeverLeader) {
  FakeClock clock;
  Leadership l = Holding(clock.Monotonic() + absl::Seconds(10));
  l.stepping_down = true;
  EXPECT_FALSE(l.IsLeader(clock.Monotonic()));
}

TEST(LeadershipPublisherTest, VersionGrowsOnlyOnChange) {
  LeadershipPublisher pub(Leadership{});
  EXPECT_EQ(pub.Current().version, 1u);
  pub.Publish(Leadership{});
  EXPECT_EQ(pub.Current().version, 1u);
  Leadership next;
  next.holder_identity = "other";
  pub.Publish(next);
  EXPECT_EQ(pub.Current().version, 2u);
  EXPECT_EQ(pub.Current().leadership.holder_identity, "other");
}

TEST(LeadershipPublisherTest, SubscribersSeeEveryChangeUntilUnsubscribed) {
  LeadershipPublisher pub(Leadership{});
  std::vector<uint64_t> seen;
  int id = pub.Subscribe([&](const LeadershipPublisher::Versioned& v) { seen.push_back(v.version); });
  Leadership l;
  l.holder_identity = "a";
  pub.Publish(l);
  l.holder_identity = "b";
  pub.Publish(l);
  pub.Unsubscribe(id);
  l.holder_identity = "c";
  pub.Publish(l);
  EXPECT_EQ(seen, (std::vector<uint64_t>{2, 3}));
}

TEST(LeadershipPublisherTest, CallbackMayUnsubscribeItself) {
  LeadershipPublisher pub(Leadership{});
  int calls = 0;
  int id = 0;
  id = pub.Subscribe([&](const LeadershipPublisher::Versioned&) {
    ++calls;
    pub.Unsubscribe(id);
  });
  Leadership l;
  l.holder_identity = "a";
  pub.Publish(l);
  l.holder_identity = "b";
  pub.Publish(l);
  EXPECT_EQ(calls, 1);
}

TEST(LeadershipPublisherTest, WaitForChangeWakesOnPublish) {
  LeadershipPublisher pub(Leadership{});
  std::thread publisher([&] {
    Leadership l;
    l.holder_identity = "a";
    pub.Publish(l);
  });
  auto v = pub.WaitForChange(1, absl::Now() + absl::Seconds(10));
  publisher.join();
  EXPECT_EQ(v.version, 2u);
  EXPECT_EQ(v.leadership.holder_identity, "a");
}

TEST(LeadershipPublisherTest, WaitForChangeReturnsAtDeadline) {
  LeadershipPublisher pub(Leadership{});
  auto v = pub.WaitForChange(1, absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(v.version, 1u);
}

}  // namespace
}  // namespace baton

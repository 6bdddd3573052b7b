#include "sidecar/common/clock.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"

namespace baton {
namespace {

TEST(MonoTimeTest, InfiniteFutureIsLaterThanAnyTimeAndStaysInfinite) {
  const MonoTime t = MonoTime::FromSinceOrigin(absl::Hours(24 * 365 * 100));
  EXPECT_LT(t, MonoTime::InfiniteFuture());
  EXPECT_EQ(MonoTime::InfiniteFuture() + absl::Hours(1), MonoTime::InfiniteFuture());
}

TEST(SystemClockTest, SleepUntilReturnsAtTheDeadline) {
  Clock* clock = SystemClock();
  const MonoTime deadline = clock->Monotonic() + absl::Milliseconds(30);
  clock->SleepUntil(deadline);
  const MonoTime end = clock->Monotonic();
  EXPECT_GE(end, deadline);
  EXPECT_LT(end - deadline, absl::Milliseconds(500));
}

TEST(SystemClockTest, AwaitUntilReturnsWhenTheConditionHolds) {
  Clock* clock = SystemClock();
  absl::Mutex mu;
  bool ready = false;
  std::thread setter([&] {
    clock->SleepUntil(clock->Monotonic() + absl::Milliseconds(10));
    absl::MutexLock lock(&mu);
    ready = true;
  });
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(
        clock->AwaitUntil(&mu, absl::Condition(&ready), clock->Monotonic() + absl::Seconds(60)));
  }
  setter.join();
}

TEST(FakeClockTest, AWaitEndsExactlyWhenTheClockIsAdvancedToItsDeadline) {
  FakeClock clock;
  const MonoTime deadline = clock.Monotonic() + absl::Seconds(10);
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    clock.SleepUntil(deadline);
    returned = true;
  });
  clock.Advance(absl::Seconds(9));
  absl::SleepFor(absl::Milliseconds(20));  // a test may sleep: nothing moves it
  EXPECT_FALSE(returned);
  clock.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_TRUE(returned);
}

// Advance locks each waiter's mutex after looking them up; a waiter whose
// mutex lives on its stack (SleepUntil) must not return while Advance is
// about to lock it.
TEST(FakeClockTest, AWaiterMayFreeItsMutexAsSoonAsItReturnsWhileTheClockAdvances) {
  FakeClock clock;
  constexpr int kWaiters = 8;
  constexpr int kRounds = 50;
  std::vector<std::thread> waiters;
  waiters.reserve(kWaiters);
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&clock, i] {
      for (int round = 1; round <= kRounds; ++round) {
        // Deadlines spread so that each Advance ends some waits and not others.
        clock.SleepUntil(clock.Monotonic() + absl::Milliseconds(1 + (i + round) % 3));
      }
    });
  }
  std::atomic<bool> done{false};
  std::thread joiner([&] {
    for (std::thread& t : waiters) t.join();
    done = true;
  });
  while (!done) clock.Advance(absl::Milliseconds(1));
  joiner.join();
}

}  // namespace
}  // namespace baton

#include "sidecar/common/boottime_timer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

// How late a wake-up may be on a loaded test machine.
constexpr absl::Duration kSlack = absl::Milliseconds(500);

// Polls `pred` for up to a few seconds; for state the timer thread updates
// after a waiter has returned.
template <typename Pred>
bool Eventually(Pred pred) {
  const MonoTime until = BoottimeNow() + absl::Seconds(5);
  while (!pred()) {
    if (BoottimeNow() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(BoottimeTimerTest, ReturnsFalseOnceTheDeadlinePasses) {
  absl::Mutex mu;
  const bool never = false;
  const MonoTime start = BoottimeNow();
  const MonoTime deadline = start + absl::Milliseconds(50);
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&never), deadline));
  const MonoTime end = BoottimeNow();
  EXPECT_GE(end, deadline);
  EXPECT_LT(end - deadline, kSlack);
}

TEST(BoottimeTimerTest, ReturnsTrueWhenTheConditionHoldsFirstAndCancelsItsDeadline) {
  absl::Mutex mu;
  bool ready = false;
  const MonoTime start = BoottimeNow();
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    absl::MutexLock lock(&mu);
    ready = true;
  });
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(
        BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&ready), start + absl::Seconds(60)));
  }
  EXPECT_LT(BoottimeNow() - start, absl::Seconds(10));
  setter.join();
  // The 60 s deadline was withdrawn, not left for the timer thread to fire
  // on a mutex that is about to go away.
  EXPECT_TRUE(Eventually([] { return BoottimeTimer::Get().pending() == 0; }));
}

TEST(BoottimeTimerTest, AConditionAlreadyTrueOrADeadlineAlreadyPastDoesNotWait) {
  absl::Mutex mu;
  const bool yes = true;
  const bool no = false;
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&yes), BoottimeNow()));
  EXPECT_FALSE(BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&no),
                                               BoottimeNow() + absl::Seconds(-1)));
  EXPECT_FALSE(BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&no), MonoTime()));
}

TEST(BoottimeTimerTest, AnInfiniteDeadlineWaitsForTheConditionAlone) {
  absl::Mutex mu;
  bool ready = false;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    absl::MutexLock lock(&mu);
    ready = true;
  });
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(
        BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&ready), MonoTime::InfiniteFuture()));
  }
  setter.join();
}

TEST(BoottimeTimerTest, ManyConcurrentWaitersEachWakeAtTheirOwnDeadline) {
  constexpr int kWaiters = 64;
  // Deadlines 0..315 ms from now in 5 ms steps, armed in shuffled order, so
  // later waiters often bring the timer's next expiry forward.
  std::vector<absl::Duration> offsets;
  offsets.reserve(kWaiters);
  for (int i = 0; i < kWaiters; ++i) offsets.push_back(absl::Milliseconds(5 * i));
  // NOLINTNEXTLINE(bugprone-random-generator-seed): the same order each run
  std::shuffle(offsets.begin(), offsets.end(), std::mt19937(7));
  // Half share one mutex; the others have one each.
  absl::Mutex shared;
  std::vector<std::unique_ptr<absl::Mutex>> own(kWaiters);
  const MonoTime start = BoottimeNow() + absl::Milliseconds(20);
  std::vector<absl::Duration> late(kWaiters);
  std::vector<int> results(kWaiters, 1);  // not vector<bool>: its bits share words
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    own[i] = std::make_unique<absl::Mutex>();
    absl::Mutex* mu = i % 2 == 0 ? &shared : own[i].get();
    threads.emplace_back([&, i, mu] {
      const bool never = false;
      const MonoTime deadline = start + offsets[i];
      absl::MutexLock lock(mu);
      results[i] = BoottimeTimer::Get().AwaitUntil(mu, absl::Condition(&never), deadline);
      late[i] = BoottimeNow() - deadline;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_FALSE(results[i]) << "waiter " << i;
    EXPECT_GE(late[i], absl::ZeroDuration()) << "waiter " << i << " woke before its deadline";
    EXPECT_LT(late[i], kSlack) << "waiter " << i;
  }
  EXPECT_EQ(BoottimeTimer::Get().pending(), 0u);
}

// A condition that turns true at about the deadline races the timer
// thread, which may have taken the alarm and be about to lock the mutex.
// The waiter's mutex is freed the moment AwaitUntil returns: were the timer
// thread to touch it afterwards, ASan (the clang tree) would report it.
TEST(BoottimeTimerTest, AWaiterMayFreeItsMutexAsSoonAsItReturnsEvenIfTheDeadlineRaces) {
  constexpr int kRounds = 200;
  int fired = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto mu = std::make_unique<absl::Mutex>();
    auto ready = std::make_unique<bool>(false);
    const MonoTime deadline = BoottimeNow() + absl::Microseconds(200 + (round % 7) * 50);
    std::thread setter([&, m = mu.get(), r = ready.get()] {
      while (BoottimeNow() < deadline) {
      }
      absl::MutexLock lock(m);
      *r = true;
    });
    bool result;
    {
      absl::MutexLock lock(mu.get());
      result = BoottimeTimer::Get().AwaitUntil(mu.get(), absl::Condition(ready.get()), deadline);
    }
    setter.join();
    mu.reset();
    ready.reset();
    if (!result) ++fired;
  }
  // Both outcomes are fine; what matters is that none touched freed memory.
  SUCCEED() << fired << " of " << kRounds << " rounds ended on the deadline";
  EXPECT_TRUE(Eventually([] { return BoottimeTimer::Get().pending() == 0; }));
}

TEST(BoottimeTimerTest, AnEarlierDeadlineArmedLaterIsNotHeldUpByALaterOne) {
  absl::Mutex far_mu;
  bool far_done = false;
  std::thread far([&] {
    absl::MutexLock lock(&far_mu);
    BoottimeTimer::Get().AwaitUntil(&far_mu, absl::Condition(&far_done),
                                    BoottimeNow() + absl::Seconds(30));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  absl::Mutex mu;
  const bool never = false;
  const MonoTime deadline = BoottimeNow() + absl::Milliseconds(30);
  {
    absl::MutexLock lock(&mu);
    EXPECT_FALSE(BoottimeTimer::Get().AwaitUntil(&mu, absl::Condition(&never), deadline));
  }
  EXPECT_LT(BoottimeNow() - deadline, kSlack);
  {
    absl::MutexLock lock(&far_mu);
    far_done = true;
  }
  far.join();
}

}  // namespace
}  // namespace baton

// SystemClock under a real wall-clock step. Steps this machine's
// CLOCK_REALTIME (testing/wall_clock_step.h): needs CAP_SYS_TIME, skips
// without it, and runs alone (ctest -L clockstep).
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sidecar/common/clock.h"
#include "sidecar/common/testing/wall_clock_step.h"

namespace baton {
namespace {

using testing::StepWallClockAndAwait;
using testing::WallClockStep;

constexpr absl::Duration kWait = absl::Milliseconds(300);
constexpr absl::Duration kStep = absl::Seconds(-30);
// How late a wait may return: scheduling on a loaded machine, not the step.
constexpr absl::Duration kSlack = absl::Milliseconds(700);

TEST(SystemClockStepTest, BackwardWallClockStepDoesNotDelayAWait) {
  std::string why_not;
  if (!WallClockStep::CanStep(&why_not)) GTEST_SKIP() << why_not;
  Clock* clock = SystemClock();

  absl::Mutex mu;
  bool waiting = false;  // guarded by mu
  const bool never = false;
  std::atomic<int64_t> returned_after_ns{-1};
  const MonoTime start = clock->Monotonic();
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    waiting = true;
    clock->AwaitUntil(&mu, absl::Condition(&never), start + kWait);
    returned_after_ns = absl::ToInt64Nanoseconds(clock->Monotonic() - start);
  });
  // The waiter holds `mu` from before it sets `waiting` until its wait
  // releases it: once this lock is ours, the wait has begun.
  mu.LockWhen(absl::Condition(&waiting));
  mu.Unlock();

  // Until the wait returns or is clearly late; the clock is put back either way.
  const absl::StatusOr<bool> in_time = StepWallClockAndAwait(
      kStep, start + kWait + kSlack - clock->Monotonic(), [&] { return returned_after_ns >= 0; });
  waiter.join();
  if (!in_time.ok()) GTEST_SKIP() << "the wall clock could not be stepped: " << in_time.status();

  const absl::Duration took = absl::Nanoseconds(returned_after_ns.load());
  EXPECT_TRUE(*in_time) << "a " << absl::FormatDuration(kWait) << " wait was still blocked "
                        << absl::FormatDuration(kWait + kSlack)
                        << " after it began, with the wall clock stepped "
                        << absl::FormatDuration(kStep) << " (it returned "
                        << absl::FormatDuration(took)
                        << " after it began, once the clock was put back)";
  EXPECT_GE(took, kWait) << "returned before its deadline";
}

}  // namespace
}  // namespace baton

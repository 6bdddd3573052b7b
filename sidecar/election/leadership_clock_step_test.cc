// LeadershipPublisher::WaitForChange under a real wall-clock step. Steps
// this machine's CLOCK_REALTIME (sidecar/common/testing/wall_clock_step.h):
// needs CAP_SYS_TIME, skips without it, and runs alone (ctest -L clockstep).
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sidecar/common/clock.h"
#include "sidecar/common/testing/wall_clock_step.h"
#include "sidecar/election/leadership.h"

namespace baton {
namespace {

using testing::SleepBoottime;
using testing::WallClockStep;

constexpr absl::Duration kWait = absl::Milliseconds(300);
constexpr absl::Duration kStep = absl::Seconds(-30);
// How late a wait may return: scheduling on a loaded machine, not the step.
constexpr absl::Duration kSlack = absl::Milliseconds(700);

TEST(LeadershipPublisherClockStepTest, BackwardWallClockStepDoesNotDelayWaitForChange) {
  std::string why_not;
  if (!WallClockStep::CanStep(&why_not)) GTEST_SKIP() << why_not;
  Clock* clock = SystemClock();
  LeadershipPublisher publisher(Leadership{});

  std::atomic<int64_t> returned_after_ns{-1};
  const MonoTime start = clock->Monotonic();
  const uint64_t version = publisher.Current().version;
  std::thread waiter([&] {
    publisher.WaitForChange(version, start + kWait, *clock);
    returned_after_ns = absl::ToInt64Nanoseconds(clock->Monotonic() - start);
  });
  // Nothing outside the publisher shows that the wait has begun; a third of
  // it is time enough for the thread to start.
  SleepBoottime(kWait / 3);

  bool in_time = false;
  std::string step_error;
  {
    WallClockStep step(kStep);
    if (step.ok()) {
      // Poll on CLOCK_BOOTTIME until the wait returns or is clearly late,
      // then let the scope restore the wall clock either way.
      while (returned_after_ns < 0 && clock->Monotonic() - start < kWait + kSlack) {
        SleepBoottime(absl::Milliseconds(5));
      }
      in_time = returned_after_ns >= 0;
    } else {
      step_error = step.error();
    }
  }
  waiter.join();
  if (!step_error.empty()) GTEST_SKIP() << "the wall clock could not be stepped: " << step_error;

  const absl::Duration took = absl::Nanoseconds(returned_after_ns.load());
  EXPECT_TRUE(in_time) << "WaitForChange with a " << absl::FormatDuration(kWait)
                       << " deadline was still blocked " << absl::FormatDuration(kWait + kSlack)
                       << " after it began, with the wall clock stepped "
                       << absl::FormatDuration(kStep) << " (it returned "
                       << absl::FormatDuration(took)
                       << " after it began, once the clock was put back)";
  EXPECT_GE(took, kWait) << "returned before its deadline";
}

}  // namespace
}  // namespace baton

// LeadershipPublisher::WaitForChange, and a leader's election loop, under a
// real wall-clock step. Steps this machine's CLOCK_REALTIME
// (sidecar/common/testing/wall_clock_step.h): needs CAP_SYS_TIME, skips
// without it, and runs alone (ctest -L clockstep).
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sidecar/common/clock.h"
#include "sidecar/common/testing/wall_clock_step.h"
#include "sidecar/election/election_loop.h"
#include "sidecar/election/elector.h"
#include "sidecar/election/fake_lease_store.h"
#include "sidecar/election/leadership.h"

namespace baton {
namespace {

using testing::SleepBoottime;
using testing::StepWallClockAndAwait;
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

  // Until the wait returns or is clearly late; the clock is put back either way.
  const absl::StatusOr<bool> in_time = StepWallClockAndAwait(
      kStep, start + kWait + kSlack - clock->Monotonic(), [&] { return returned_after_ns >= 0; });
  waiter.join();
  if (!in_time.ok()) GTEST_SKIP() << "the wall clock could not be stepped: " << in_time.status();

  const absl::Duration took = absl::Nanoseconds(returned_after_ns.load());
  EXPECT_TRUE(*in_time) << "WaitForChange with a " << absl::FormatDuration(kWait)
                        << " deadline was still blocked " << absl::FormatDuration(kWait + kSlack)
                        << " after it began, with the wall clock stepped "
                        << absl::FormatDuration(kStep) << " (it returned "
                        << absl::FormatDuration(took)
                        << " after it began, once the clock was put back)";
  EXPECT_GE(took, kWait) << "returned before its deadline";
}

// A leader on the real clock, renewing every 200 ms: the wall clock steps
// back 30 s for 2 s, during which it must keep renewing (every timed wait of
// the loop is on CLOCK_BOOTTIME) and keep leading.
TEST(ElectionLoopClockStepTest, BackwardWallClockStepOf30sLeavesALeaderLeadingAndRenewing) {
  std::string why_not;
  if (!WallClockStep::CanStep(&why_not)) GTEST_SKIP() << why_not;
  Clock* clock = SystemClock();
  FakeLeaseStore store;
  LeaseRecord released;  // taken at once; leads a renew deadline later
  released.lease_duration_seconds = 1;
  store.Set(released);
  Elector::Options o;
  o.identity = "me";
  o.lease_name = "lock";
  o.lease_namespace = "ns";
  o.lease_duration = absl::Seconds(3);
  o.renew_deadline = absl::Milliseconds(1500);
  o.retry_period = absl::Milliseconds(200);
  Elector elector(o, clock, &store);
  LeadershipPublisher publisher(elector.Snapshot());
  ElectionLoop loop(&elector, &publisher);
  loop.Start();
  auto leading = [&] { return publisher.Current().leadership.IsLeader(clock->Monotonic()); };
  for (const MonoTime give_up = clock->Monotonic() + absl::Seconds(10);
       !leading() && clock->Monotonic() < give_up;) {
    SleepBoottime(absl::Milliseconds(20));
  }
  ASSERT_TRUE(leading());

  const int renews_before = store.Calls(FakeLeaseStore::Verb::kUpdate);
  bool led_throughout = true;
  // For 2 s (the predicate never ends it early), then the clock is put back.
  const absl::StatusOr<bool> stepped = StepWallClockAndAwait(kStep, absl::Seconds(2), [&] {
    led_throughout = led_throughout && leading();
    return false;
  });
  const int renews = store.Calls(FakeLeaseStore::Verb::kUpdate) - renews_before;
  EXPECT_TRUE(loop.Shutdown(absl::Seconds(5)));
  if (!stepped.ok()) GTEST_SKIP() << "the wall clock could not be stepped: " << stepped.status();
  EXPECT_TRUE(led_throughout) << "stopped leading with the wall clock stepped back";
  // 2 s at one renew every 200-240 ms: about nine; a stalled loop makes none.
  EXPECT_GE(renews, 5) << "renews in the 2 s after the wall clock stepped back 30 s";
}

}  // namespace
}  // namespace baton

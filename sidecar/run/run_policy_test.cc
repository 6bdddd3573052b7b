#include "sidecar/run/run_policy.h"

#include <csignal>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::run {
namespace {

using ::testing::HasSubstr;

TEST(RunPolicyTest, ParsesTheThreeRestartPolicies) {
  EXPECT_EQ(*ParseRestartPolicy("always"), RestartPolicy::kAlways);
  EXPECT_EQ(*ParseRestartPolicy("on-failure"), RestartPolicy::kOnFailure);
  EXPECT_EQ(*ParseRestartPolicy("never"), RestartPolicy::kNever);
  EXPECT_THAT(ParseRestartPolicy("sometimes").status().message(), HasSubstr("--restart"));
}

TEST(RunPolicyTest, ParsesSignalNamesAndNumbers) {
  EXPECT_EQ(*ParseStopSignal("SIGTERM"), SIGTERM);
  EXPECT_EQ(*ParseStopSignal("int"), SIGINT);
  EXPECT_EQ(*ParseStopSignal("QUIT"), SIGQUIT);
  EXPECT_EQ(*ParseStopSignal("10"), 10);
  EXPECT_THAT(ParseStopSignal("SIGNOPE").status().message(), HasSubstr("--stop-signal"));
  EXPECT_FALSE(ParseStopSignal("0").ok());
  EXPECT_FALSE(ParseStopSignal("65").ok());
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(40), "40");
}

TEST(RunPolicyTest, RestartFollowsThePolicy) {
  const ExitStatus ok = ExitStatus::Exited(0);
  const ExitStatus failed{.code = 3};
  const ExitStatus killed{.signaled = true, .signal = SIGKILL};
  EXPECT_TRUE(ShouldRestart(RestartPolicy::kAlways, ok));
  EXPECT_TRUE(ShouldRestart(RestartPolicy::kAlways, failed));
  EXPECT_FALSE(ShouldRestart(RestartPolicy::kOnFailure, ok));
  EXPECT_TRUE(ShouldRestart(RestartPolicy::kOnFailure, failed));
  EXPECT_TRUE(ShouldRestart(RestartPolicy::kOnFailure, killed));
  EXPECT_FALSE(ShouldRestart(RestartPolicy::kNever, failed));
}

TEST(RunPolicyTest, ExitCodeIsTheChildsOr128PlusItsSignal) {
  EXPECT_EQ(ExitCodeFor(ExitStatus::Exited(0)), 0);
  EXPECT_EQ(ExitCodeFor(ExitStatus::Exited(7)), 7);
  EXPECT_EQ(ExitCodeFor(ExitStatus::Killed(SIGKILL)), 137);
  EXPECT_EQ(ExitStatus::FromWaitStatus(0x0300).code, 3);
  EXPECT_EQ(ExitStatus::Killed(SIGTERM).ToString(), "signal=SIGTERM");
}

TEST(RunPolicyTest, TheChildIsKilledBeforeItsValidityEnds) {
  const MonoTime until = MonoTime::FromSinceOrigin(absl::Seconds(100));
  const absl::Duration grace = absl::Milliseconds(500);
  EXPECT_EQ(StopSignalAt(until, grace), until + -(grace + kKillMargin));
  // Signaled early (a step-down): the whole grace.
  const MonoTime early = MonoTime::FromSinceOrigin(absl::Seconds(90));
  EXPECT_EQ(KillAt(early, until, grace), early + grace);
  // Signaled late (baton woke up late): the validity bounds the grace.
  const MonoTime late = until + -absl::Milliseconds(300);
  EXPECT_EQ(KillAt(late, until, grace), until + -kKillMargin);
  EXPECT_LT(KillAt(late, until, grace), WatchdogKillAt(until));
  EXPECT_LT(WatchdogKillAt(until), until);
}

TEST(RunPolicyTest, RefusesAGraceThatAHealthyLeaderWouldHit) {
  // renew 1.5s, retry 250ms: validity falls to 1.2s just before a renew.
  EXPECT_TRUE(
      ValidateStopGrace(absl::Milliseconds(500), absl::Milliseconds(1500), absl::Milliseconds(250))
          .ok());
  const absl::Status s =
      ValidateStopGrace(absl::Seconds(1), absl::Milliseconds(1500), absl::Milliseconds(250));
  EXPECT_THAT(s.message(), HasSubstr("--stop-grace=1s"));
  EXPECT_THAT(s.message(), HasSubstr("--renew-deadline"));
  EXPECT_THAT(s.message(), HasSubstr("--retry-period"));
  EXPECT_FALSE(ValidateStopGrace(absl::ZeroDuration(), absl::Seconds(10), absl::Seconds(2)).ok());
  // The defaults fit: 5s + 200ms < 10s − 2.4s.
  EXPECT_TRUE(ValidateStopGrace(absl::Seconds(5), absl::Seconds(10), absl::Seconds(2)).ok());
}

}  // namespace
}  // namespace baton::run

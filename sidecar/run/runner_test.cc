#include "sidecar/run/runner.h"

#include <csignal>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"

namespace baton::run {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records what the Runner asks of the child; the test plays its exits.
class FakeSupervisor final : public Supervisor {
 public:
  absl::StatusOr<pid_t> Start(const ChildSpec& spec) override {
    if (!start_result.ok()) return start_result;
    starts.push_back(spec);
    return 1000 + static_cast<pid_t>(starts.size());
  }
  void Signal(int sig) override { signals.push_back(sig); }
  void ExtendDeadline(MonoTime kill_by) override { deadlines.push_back(kill_by); }

  absl::Status start_result;
  std::vector<ChildSpec> starts;
  std::vector<int> signals;
  std::vector<MonoTime> deadlines;
};

constexpr absl::Duration kRenewDeadline = absl::Milliseconds(1500);
constexpr absl::Duration kGrace = absl::Milliseconds(500);

class RunnerTest : public ::testing::Test {
 protected:
  RunnerTest() : publisher_(Initial()) {}

  static Leadership Initial() {
    Leadership l;
    l.identity = "me";
    l.lease_name = "job";
    l.lease_namespace = "ns";
    return l;
  }

  Runner& MakeRunner(RestartPolicy restart) {
    Runner::Options options;
    options.argv = {"job", "--flag"};
    options.restart = restart;
    options.stop_grace = kGrace;
    options.restart_delay = absl::Milliseconds(250);
    options.acknowledge = [this](const Acknowledgement& ack) {
      acks_.push_back(ack.fencing_token);
      acked_up_to_.push_back(ack.up_to);
      return publisher_.Acknowledge(ack, clock_.Monotonic());
    };
    runner_ = std::make_unique<Runner>(std::move(options), &clock_, &publisher_, &supervisor_);
    return *runner_;
  }

  // A successful renew just now, in term `token`.
  void Renewed(int64_t token) {
    Leadership l = publisher_.Current().leadership;
    l.observed = true;
    l.holding = true;
    l.holder_identity = "me";
    l.fencing_token = token;
    l.fencing_revision = ResourceVersion::Parse(absl::StrCat(100 + token));
    l.leader_until = clock_.Monotonic() + kRenewDeadline;
    publisher_.Publish(l);
  }
  void Lost() {
    Leadership l = publisher_.Current().leadership;
    l.holding = false;
    l.holder_identity = "other";
    publisher_.Publish(l);
  }
  std::optional<MonoTime> Outstanding(int64_t token) {
    return publisher_.OutstandingUntil(token, clock_.Monotonic());
  }

  FakeClock clock_;
  LeadershipPublisher publisher_;
  FakeSupervisor supervisor_;
  std::vector<int64_t> acks_;
  // The deadline each acknowledgement named, in the same order.
  std::vector<std::optional<MonoTime>> acked_up_to_;
  std::unique_ptr<Runner> runner_;
};

TEST_F(RunnerTest, FollowerStartsNothingAndPromisesNothing) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  EXPECT_EQ(runner.Poll(), MonoInfiniteFuture());
  EXPECT_THAT(supervisor_.starts, IsEmpty());
  EXPECT_FALSE(Outstanding(0).has_value());
}

TEST_F(RunnerTest, LeaderStartsTheChildWithItsEnvironmentAndAPromise) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(4);
  const MonoTime wake = runner.Poll();
  ASSERT_EQ(supervisor_.starts.size(), 1u);
  const ChildSpec& spec = supervisor_.starts[0];
  EXPECT_THAT(spec.argv, ElementsAre("job", "--flag"));
  EXPECT_THAT(spec.extra_env, Contains("BATON_FENCING_TOKEN=4"));
  EXPECT_THAT(spec.extra_env, Contains("BATON_FENCING_REVISION=104"));
  EXPECT_THAT(spec.extra_env, Contains("BATON_LEASE=ns/job"));
  EXPECT_THAT(spec.extra_env, Contains("BATON_IDENTITY=me"));
  EXPECT_THAT(spec.extra_env, Contains("BATON_VALID_UNTIL=2026-09-21T14:13:21.500Z"));
  const MonoTime until = clock_.Monotonic() + kRenewDeadline;
  EXPECT_EQ(spec.kill_by, WatchdogKillAt(until));
  EXPECT_EQ(wake, StopSignalAt(until, kGrace));
  // The child's promise is on the ledger under the Runner's client id.
  EXPECT_EQ(Outstanding(4), until);
  EXPECT_TRUE(runner.child_running());
}

TEST_F(RunnerTest, RenewsMoveTheWatchdogAndThePromise) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(1);
  runner.Poll();
  clock_.Advance(absl::Milliseconds(250));
  Renewed(1);
  const MonoTime wake = runner.Poll();
  const MonoTime until = clock_.Monotonic() + kRenewDeadline;
  EXPECT_THAT(supervisor_.deadlines, ElementsAre(WatchdogKillAt(until)));
  EXPECT_EQ(wake, StopSignalAt(until, kGrace));
  EXPECT_EQ(Outstanding(1), until);
  EXPECT_THAT(supervisor_.signals, IsEmpty());
}

TEST_F(RunnerTest, ChildExitAcknowledgesUpToTheLastDeadlineItWasAnswered) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(1);
  runner.Poll();
  clock_.Advance(absl::Milliseconds(250));
  Renewed(1);
  runner.Poll();
  const MonoTime until = clock_.Monotonic() + kRenewDeadline;
  clock_.Advance(absl::Milliseconds(20));
  runner.OnChildExit(ExitStatus::Exited(0));
  EXPECT_THAT(acks_, ElementsAre(1));
  EXPECT_THAT(acked_up_to_, ElementsAre(std::optional<MonoTime>(until)));
  EXPECT_FALSE(Outstanding(1).has_value());
}

TEST_F(RunnerTest, FailingRenewsStopTheChildThenKillItBeforeTheValidityEnds) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(1);
  const MonoTime until = clock_.Monotonic() + kRenewDeadline;
  const MonoTime stop_at = runner.Poll();
  clock_.Advance(stop_at - clock_.Monotonic());
  const MonoTime kill_at = runner.Poll();
  EXPECT_THAT(supervisor_.signals, ElementsAre(SIGTERM));
  EXPECT_EQ(kill_at, until + -kKillMargin);
  clock_.Advance(kill_at - clock_.Monotonic());
  EXPECT_EQ(runner.Poll(), MonoInfiniteFuture());
  EXPECT_THAT(supervisor_.signals, ElementsAre(SIGTERM, SIGKILL));
  // Its end is the acknowledgement; it is run again once a renew succeeds.
  runner.OnChildExit(ExitStatus::Killed(SIGKILL));
  EXPECT_THAT(acks_, ElementsAre(1));
  EXPECT_FALSE(Outstanding(1).has_value());
  EXPECT_EQ(supervisor_.starts.size(), 1u);
  Renewed(1);
  runner.Poll();
  EXPECT_EQ(supervisor_.starts.size(), 2u);
  EXPECT_FALSE(runner.exit_code().has_value());
}

TEST_F(RunnerTest, StepDownStopsTheChildAndItsExitAcknowledges) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(2);
  runner.Poll();
  publisher_.StepDown();
  EXPECT_EQ(runner.Poll(), clock_.Monotonic() + kGrace);
  EXPECT_THAT(supervisor_.signals, ElementsAre(SIGTERM));
  // The step-down waits for the child's promise until it exits.
  EXPECT_TRUE(Outstanding(2).has_value());
  clock_.Advance(absl::Milliseconds(20));
  runner.OnChildExit(ExitStatus::Killed(SIGTERM));
  EXPECT_FALSE(Outstanding(2).has_value());
  EXPECT_THAT(acks_, ElementsAre(2));
  EXPECT_EQ(runner.Poll(), MonoInfiniteFuture());
  EXPECT_EQ(supervisor_.starts.size(), 1u);
}

TEST_F(RunnerTest, LostTermStopsTheChildAndANewTermStartsANewOne) {
  Runner& runner = MakeRunner(RestartPolicy::kNever);
  Renewed(2);
  runner.Poll();
  Lost();
  runner.Poll();
  EXPECT_THAT(supervisor_.signals, ElementsAre(SIGTERM));
  runner.OnChildExit(ExitStatus::Exited(0));
  // Stopped by baton, so --restart=never does not end baton.
  EXPECT_FALSE(runner.exit_code().has_value());
  Renewed(3);
  runner.Poll();
  ASSERT_EQ(supervisor_.starts.size(), 2u);
  EXPECT_THAT(supervisor_.starts[1].extra_env, Contains("BATON_FENCING_TOKEN=3"));
}

TEST_F(RunnerTest, IgnoredStopSignalIsFollowedBySigkillAtTheGrace) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(1);
  runner.Poll();
  runner.Shutdown();
  const MonoTime kill_at = runner.Poll();
  EXPECT_EQ(kill_at, clock_.Monotonic() + kGrace);
  clock_.Advance(kGrace + -absl::Milliseconds(1));
  runner.Poll();
  EXPECT_THAT(supervisor_.signals, ElementsAre(SIGTERM));
  clock_.Advance(absl::Milliseconds(1));
  runner.Poll();
  EXPECT_THAT(supervisor_.signals, ElementsAre(SIGTERM, SIGKILL));
  EXPECT_FALSE(runner.exit_code().has_value());
  runner.OnChildExit(ExitStatus::Killed(SIGKILL));
  EXPECT_EQ(runner.exit_code(), 0);
}

TEST_F(RunnerTest, OnFailureRestartsAFailedChildAfterTheDelay) {
  Runner& runner = MakeRunner(RestartPolicy::kOnFailure);
  Renewed(1);
  runner.Poll();
  runner.OnChildExit(ExitStatus::Exited(3));
  EXPECT_THAT(acks_, ElementsAre(1));
  const MonoTime restart_at = clock_.Monotonic() + absl::Milliseconds(250);
  EXPECT_EQ(runner.Poll(), restart_at);
  EXPECT_EQ(supervisor_.starts.size(), 1u);
  clock_.Advance(absl::Milliseconds(250));
  Renewed(1);
  runner.Poll();
  EXPECT_EQ(supervisor_.starts.size(), 2u);
}

TEST_F(RunnerTest, OnFailureEndsWithZeroAfterASuccessfulChild) {
  Runner& runner = MakeRunner(RestartPolicy::kOnFailure);
  Renewed(1);
  runner.Poll();
  runner.OnChildExit(ExitStatus::Exited(0));
  EXPECT_EQ(runner.exit_code(), 0);
  EXPECT_EQ(runner.Poll(), MonoInfiniteFuture());
  EXPECT_EQ(supervisor_.starts.size(), 1u);
}

TEST_F(RunnerTest, NeverEndsWithTheChildsExitCode) {
  Runner& runner = MakeRunner(RestartPolicy::kNever);
  Renewed(1);
  runner.Poll();
  runner.OnChildExit(ExitStatus::Killed(SIGSEGV));
  EXPECT_EQ(runner.exit_code(), 128 + SIGSEGV);
}

TEST_F(RunnerTest, AlwaysRestartsASuccessfulChild) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(1);
  runner.Poll();
  runner.OnChildExit(ExitStatus::Exited(0));
  EXPECT_FALSE(runner.exit_code().has_value());
  clock_.Advance(absl::Milliseconds(250));
  Renewed(1);
  runner.Poll();
  EXPECT_EQ(supervisor_.starts.size(), 2u);
}

TEST_F(RunnerTest, ValidityTooShortForTheGraceStartsNothing) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  Renewed(1);
  clock_.Advance(kRenewDeadline - kGrace - kKillMargin);
  EXPECT_EQ(runner.Poll(), MonoInfiniteFuture());
  EXPECT_THAT(supervisor_.starts, IsEmpty());
  EXPECT_FALSE(Outstanding(1).has_value());
}

TEST_F(RunnerTest, ShutdownWithoutAChildEndsAtOnce) {
  Runner& runner = MakeRunner(RestartPolicy::kAlways);
  runner.Shutdown();
  runner.Poll();
  EXPECT_EQ(runner.exit_code(), 0);
}

TEST_F(RunnerTest, AStartThatFailsCountsAsExitCode127) {
  Runner& runner = MakeRunner(RestartPolicy::kNever);
  supervisor_.start_result = absl::InternalError("fork: out of memory");
  Renewed(1);
  runner.Poll();
  EXPECT_EQ(runner.exit_code(), 127);
  EXPECT_FALSE(Outstanding(1).has_value());
}

}  // namespace
}  // namespace baton::run

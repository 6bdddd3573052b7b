#include "sidecar/election/leadership.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
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
  int id =
      pub.Subscribe([&](const LeadershipPublisher::Versioned& v) { seen.push_back(v.version); });
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
  FakeClock clock;  // never advanced: only the publish can end the wait
  LeadershipPublisher pub(Leadership{});
  std::thread publisher([&] {
    Leadership l;
    l.holder_identity = "a";
    pub.Publish(l);
  });
  auto v = pub.WaitForChange(1, clock.Monotonic() + absl::Seconds(10), clock);
  publisher.join();
  EXPECT_EQ(v.version, 2u);
  EXPECT_EQ(v.leadership.holder_identity, "a");
}

TEST(LeadershipPublisherTest, WaitForChangeReturnsAtTheDeadlineOfItsClock) {
  FakeClock clock;
  LeadershipPublisher pub(Leadership{});
  // The deadline before the advancer starts: read after it, it could be 20s.
  const MonoTime deadline = clock.Monotonic() + absl::Seconds(10);
  std::thread advancer([&] { clock.Advance(absl::Seconds(10)); });
  auto v = pub.WaitForChange(1, deadline, clock);
  advancer.join();
  EXPECT_EQ(v.version, 1u);
}

TEST(LeadershipPublisherTest, WaitForChangeReturnsAtTheDeadlineOfTheSystemClock) {
  Clock* clock = SystemClock();
  LeadershipPublisher pub(Leadership{});
  const MonoTime deadline = clock->Monotonic() + absl::Milliseconds(20);
  auto v = pub.WaitForChange(1, deadline, *clock);
  EXPECT_EQ(v.version, 1u);
  EXPECT_GE(clock->Monotonic(), deadline);
}

// --- The promise ledger and the step-down mark -----------------------------

class PromiseLedgerTest : public ::testing::Test {
 protected:
  MonoTime Now() const { return clock_.Monotonic(); }
  Leadership Term(int64_t token, absl::Duration left) {
    Leadership l = Holding(Now() + left);
    l.fencing_token = token;
    return l;
  }

  FakeClock clock_;
  LeadershipPublisher publisher_{Leadership{}};
};

TEST_F(PromiseLedgerTest, ALeaderAnswerIsAPromiseUntilLeaderUntil) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt) << "nothing answered yet";
  publisher_.Promise("app", Now());
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), Now() + absl::Seconds(10));
  EXPECT_EQ(publisher_.OutstandingUntil(2, Now()), std::nullopt) << "another term";
}

TEST_F(PromiseLedgerTest, ANotLeaderAnswerPromisesNothing) {
  Leadership l = Term(3, absl::Seconds(10));
  l.stepping_down = true;
  publisher_.Publish(l);
  publisher_.Promise("app", Now());
  publisher_.Promise("", Now());
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, AcknowledgementVoidsOnlyThatClientsPromisesOfThatTerm) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime until = publisher_.Promise("a", Now()).leadership().leader_until;
  publisher_.Promise("b", Now());
  EXPECT_FALSE(publisher_.Acknowledge({"a", 2, until}, Now()));
  EXPECT_FALSE(publisher_.Acknowledge({"c", 3, until}, Now()));
  EXPECT_TRUE(publisher_.Acknowledge({"a", 3, until}, Now()));
  EXPECT_FALSE(publisher_.Acknowledge({"a", 3, until}, Now())) << "nothing left to acknowledge";
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), until) << "b's promise";
  EXPECT_TRUE(publisher_.Acknowledge({"b", 3, until}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, AnonymousPromisesOnlyLapse) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("", Now());
  EXPECT_FALSE(publisher_.Acknowledge({"", 3, std::nullopt}, Now()));
  clock_.Advance(absl::Seconds(9));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), Now() + absl::Seconds(1));
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, ARenewExtendsTheOutstandingPromise) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  clock_.Advance(absl::Seconds(2));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), Now() + absl::Seconds(10));
}

// --- Acknowledgements cover what they name ---------------------------------

TEST_F(PromiseLedgerTest, LateAckDoesNotVoidALaterPromise) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime first = publisher_.Promise("app", Now()).leadership().leader_until;
  // The app is done with that answer and acknowledges it; the call times out
  // and is retried. Meanwhile a renew, and the app starts new work on a
  // fresh answer.
  clock_.Advance(absl::Seconds(2));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime second = publisher_.Promise("app", Now()).leadership().leader_until;
  ASSERT_GT(second, first);
  // The old acknowledgement (and its retry) arrive now.
  EXPECT_FALSE(publisher_.Acknowledge({"app", 3, first}, Now())) << "a later promise remains";
  EXPECT_FALSE(publisher_.Acknowledge({"app", 3, first}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), second);
  // Acknowledging the answer it acts on now settles it.
  EXPECT_TRUE(publisher_.Acknowledge({"app", 3, second}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, AckSentBeforeTheTermResumedDoesNotVoidItsNewPromise) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime before = publisher_.Promise("app", Now()).leadership().leader_until;
  // Renews fail past the renew deadline: not leader, and the app's work ends.
  clock_.Advance(absl::Seconds(10));
  ASSERT_FALSE(publisher_.Promise("app", Now()).leadership().IsLeader(Now()));
  // The API comes back and the same term resumes (same token); the app
  // leads again before its acknowledgement of the earlier work arrives.
  clock_.Advance(absl::Seconds(1));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime resumed = publisher_.Promise("app", Now()).leadership().leader_until;
  EXPECT_FALSE(publisher_.Acknowledge({"app", 3, before}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), resumed);
}

TEST_F(PromiseLedgerTest, SharedIdAckCoversOnlyWhatItNames) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  // Two processes use the client id "shared": one reader to the ledger.
  const MonoTime first = publisher_.Promise("shared", Now()).leadership().leader_until;
  clock_.Advance(absl::Seconds(2));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime second = publisher_.Promise("shared", Now()).leadership().leader_until;
  // The first process finishes and acknowledges what it acted on: the
  // second process's later promise stays outstanding.
  EXPECT_FALSE(publisher_.Acknowledge({"shared", 3, first}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), second);
  // Any process naming the later deadline speaks for both.
  EXPECT_TRUE(publisher_.Acknowledge({"shared", 3, second}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, AckCoversEveryAnswerUpToTheDeadlineItNames) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  clock_.Advance(absl::Seconds(2));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime second = publisher_.Promise("app", Now()).leadership().leader_until;
  // Answers between two renews share a deadline: naming it covers them all.
  publisher_.Promise("app", Now());
  EXPECT_TRUE(publisher_.Acknowledge({"app", 3, second + absl::Seconds(1)}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, ABoundedAnswerCarriesAndPromisesOnlyItsBound) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const LeaderAnswer bounded = publisher_.Promise("", Now(), Now() + absl::Seconds(1));
  EXPECT_TRUE(bounded.leadership().IsLeader(Now()));
  EXPECT_EQ(bounded.leadership().leader_until, Now() + absl::Seconds(1));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), Now() + absl::Seconds(1));
  // A bound past the term's own deadline changes nothing.
  EXPECT_EQ(publisher_.Promise("app", Now(), Now() + absl::Seconds(20)).leadership().leader_until,
            Now() + absl::Seconds(10));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), Now() + absl::Seconds(10));
}

TEST_F(PromiseLedgerTest, AnAcknowledgementNamingABoundedDeadlineSettlesIt) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime told =
      publisher_.Promise("app", Now(), Now() + absl::Seconds(1)).leadership().leader_until;
  EXPECT_TRUE(publisher_.Acknowledge({"app", 3, told}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, VoidedPromisesHoldNothingBack) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  publisher_.Promise("", Now());
  publisher_.StepDown();
  publisher_.VoidPromises();
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, AckNamesADeadlineAtTheNanosecondResolutionOfAnswers) {
  // A leader_until with a fraction of a nanosecond (renew deadlines cut to
  // what the Lease grants are divided), which answers print truncated.
  const MonoTime until = Now() + absl::Seconds(10) + absl::Nanoseconds(1) / 4;
  Leadership l = Term(3, absl::Seconds(10));
  l.leader_until = until;
  publisher_.Publish(l);
  publisher_.Promise("app", Now());
  const MonoTime printed =
      MonoTime::FromSinceOrigin(absl::Trunc(until.SinceOrigin(), absl::Nanoseconds(1)));
  ASSERT_LT(printed, until);
  EXPECT_TRUE(publisher_.Acknowledge({"app", 3, printed}, Now()));
}

TEST_F(PromiseLedgerTest, AckWithoutADeadlineVoidsEveryPromiseOfTheTermSoFar) {
  // What acknowledgements meant before they named a deadline, kept for
  // clients that send none.
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  clock_.Advance(absl::Seconds(2));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  EXPECT_TRUE(publisher_.Acknowledge({"app", 3, std::nullopt}, Now()));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, AckOfLapsedPromisesSettlesNothing) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime until = publisher_.Promise("app", Now()).leadership().leader_until;
  clock_.Advance(absl::Seconds(10));
  EXPECT_FALSE(publisher_.Acknowledge({"app", 3, until}, Now()));
}

// --- The limit on named readers --------------------------------------------

TEST_F(PromiseLedgerTest, LapsedPromisesDoNotCountAgainstTheClientLimit) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  for (int i = 0; i < LeadershipPublisher::kMaxTrackedClients; ++i) {
    publisher_.Promise(absl::StrCat("old-", i), Now());
  }
  // Those promises lapse; the term goes on with renews.
  clock_.Advance(absl::Seconds(11));
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const MonoTime until = publisher_.Promise("app", Now()).leadership().leader_until;
  EXPECT_TRUE(publisher_.Acknowledge({"app", 3, until}, Now())) << "tracked by name";
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt) << "no anonymous promise";
  EXPECT_LE(publisher_.TrackedClients(), LeadershipPublisher::kMaxTrackedClients);
}

TEST_F(PromiseLedgerTest, PastTheLimitOnlyTheOverflowingReaderIsUntracked) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  for (int i = 0; i < LeadershipPublisher::kMaxTrackedClients; ++i) {
    publisher_.Promise(absl::StrCat("c", i), Now());
  }
  const MonoTime until = publisher_.Promise("one-too-many", Now()).leadership().leader_until;
  EXPECT_EQ(publisher_.TrackedClients(), LeadershipPublisher::kMaxTrackedClients);
  EXPECT_FALSE(publisher_.Acknowledge({"one-too-many", 3, until}, Now())) << "not tracked";
  // Everyone tracked keeps their promises and their acknowledgements.
  for (int i = 0; i < LeadershipPublisher::kMaxTrackedClients; ++i) {
    ASSERT_TRUE(publisher_.Acknowledge({absl::StrCat("c", i), 3, until}, Now()));
  }
  // The overflowing reader's promise was kept, as an anonymous one.
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), until);
  // With room again, it is tracked by name from its next answer on.
  publisher_.Promise("one-too-many", Now());
  EXPECT_TRUE(publisher_.Acknowledge({"one-too-many", 3, until}, Now()));
}

TEST_F(PromiseLedgerTest, AClientPerRequestNeverLocksOutALongLivedReader) {
  // An app makes a client (a new client_id) per request, 50 a second, for
  // five minutes of one term: 15,000 names, about 500 with live promises at
  // any time (a renew every 2s, each promising 10s).
  publisher_.Publish(Term(3, absl::Seconds(10)));
  int names = 0;
  for (int tick = 0; tick < 3000; ++tick) {
    clock_.Advance(absl::Milliseconds(100));
    if (tick % 20 == 0) publisher_.Publish(Term(3, absl::Seconds(10)));
    for (int i = 0; i < 5; ++i) publisher_.Promise(absl::StrCat("request-", names++), Now());
    ASSERT_LE(publisher_.TrackedClients(), LeadershipPublisher::kMaxTrackedClients);
  }
  ASSERT_GT(names, 10 * LeadershipPublisher::kMaxTrackedClients);
  // A long-lived reader that arrives now (a restarted process, a new name)
  // is tracked, and its acknowledgement counts.
  const MonoTime until = publisher_.Promise("worker", Now()).leadership().leader_until;
  EXPECT_TRUE(publisher_.Acknowledge({"worker", 3, until}, Now()));
  // The per-request readers never acknowledge; only their promises hold the
  // step-down, until they lapse.
  publisher_.StepDown();
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(publisher_.OutstandingUntil(3, Now()), std::nullopt);
}

TEST_F(PromiseLedgerTest, PromisesOfTheLastTermStayOutstandingInTheNext) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  publisher_.Promise("app", Now());
  // The Lease was deleted and recreated by this same leader: a new term
  // starts while the last one's promise still runs.
  clock_.Advance(absl::Seconds(1));
  publisher_.Publish(Term(4, absl::Seconds(2)));
  EXPECT_EQ(publisher_.OutstandingUntil(4, Now()), Now() + absl::Seconds(9));
}

TEST_F(PromiseLedgerTest, StepDownMarksEverySnapshotUntilTheLoopEndsIt) {
  publisher_.Publish(Term(3, absl::Seconds(10)));
  const uint64_t request = publisher_.StepDown();
  EXPECT_TRUE(publisher_.Current().leadership.stepping_down);
  // The election loop publishes its own (older) view of the same term: the
  // mark holds, so no answer says leader again.
  publisher_.Publish(Term(3, absl::Seconds(10)));
  EXPECT_TRUE(publisher_.Current().leadership.stepping_down);
  EXPECT_FALSE(publisher_.Promise("app", Now()).leadership().IsLeader(Now()));
  // Nor a new term the loop was acquiring meanwhile.
  publisher_.Publish(Leadership{});
  publisher_.Publish(Term(4, absl::Seconds(10)));
  EXPECT_FALSE(publisher_.Promise("app", Now()).leadership().IsLeader(Now()));
  // Once the loop has ended the step-down (Resign done), terms lead again.
  publisher_.EndStepDown(request);
  publisher_.Publish(Term(5, absl::Seconds(10)));
  EXPECT_TRUE(publisher_.Promise("app", Now()).leadership().IsLeader(Now()));
}

// A takeover in flight when the step-down begins: the term it wins must not
// say leader (a SIGTERM or Resign that found nothing to step down from).
TEST_F(PromiseLedgerTest, StepDownWhenNotHoldingMarksTheNextTerm) {
  const uint64_t version = publisher_.Current().version;
  publisher_.StepDown();
  EXPECT_GT(publisher_.Current().version, version) << "watchers learn of the step-down at once";
  EXPECT_TRUE(publisher_.Current().leadership.stepping_down);
  publisher_.Publish(Term(3, absl::Seconds(10)));
  EXPECT_TRUE(publisher_.Current().leadership.stepping_down);
  EXPECT_FALSE(publisher_.Promise("app", Now()).leadership().IsLeader(Now()));
}

TEST_F(PromiseLedgerTest, EndingAnEarlierStepDownDoesNotEndALaterOne) {
  const uint64_t first = publisher_.StepDown();
  publisher_.StepDown();
  publisher_.EndStepDown(first);
  publisher_.Publish(Term(3, absl::Seconds(10)));
  EXPECT_FALSE(publisher_.Promise("app", Now()).leadership().IsLeader(Now()));
}

}  // namespace
}  // namespace baton

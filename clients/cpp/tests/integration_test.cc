// Against real baton sidecars on a real control plane, started by
// clients/testing/sidecars; $BATON_SIDECARS names its sidecars.json. The
// sidecars are shared, so each test starts from a settled election.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "baton/client/client.h"
#include "conformance.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace baton::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct Sidecar {
  std::string identity;
  std::string grpc;
  int pid = 0;  // 0 while restarting
};

struct Fixture {
  std::string namespace_;
  std::string lease_name;
  absl::Duration lease_duration;
  absl::Duration renew_deadline;
  std::vector<Sidecar> sidecars;
};

Fixture ReadFixture() {
  const char* path = std::getenv("BATON_SIDECARS");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::Struct json;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text.str(), &json).ok()) << path;
  const auto& f = json.fields();
  Fixture fx{f.at("namespace").string_value(),
             f.at("leaseName").string_value(),
             absl::Seconds(f.at("leaseDuration").number_value()),
             absl::Seconds(f.at("renewDeadline").number_value()),
             {}};
  for (const auto& v : f.at("sidecars").list_value().values()) {
    const auto& s = v.struct_value().fields();
    fx.sidecars.push_back(
        {s.at("identity").string_value(), s.at("grpc").string_value(),
         s.at("pid").has_number_value() ? static_cast<int>(s.at("pid").number_value()) : 0});
  }
  return fx;
}

ClientOptions FastOptions(const Sidecar& s) {
  ClientOptions options;
  options.grpc_addr = s.grpc;
  options.heartbeat_interval = absl::Milliseconds(300);
  options.min_backoff = absl::Milliseconds(50);
  options.max_backoff = absl::Milliseconds(500);
  return options;
}

std::unique_ptr<Client> Connect(const Sidecar& s, absl::Duration call_timeout = absl::Seconds(2)) {
  ClientOptions options = FastOptions(s);
  options.call_timeout = call_timeout;
  return *Client::Create(options);
}

void Signal(const Sidecar& s, int sig) {
  ASSERT_NE(s.pid, 0) << s.identity << " is not running";
  ASSERT_EQ(kill(s.pid, sig), 0);
}

// Waits until a SIGSTOP sent to `s` has taken effect (kill returns before
// the process is stopped, and it may answer meanwhile).
void AwaitStopped(const Sidecar& s) {
  const auto deadline = steady_clock::now() + std::chrono::seconds(2);
  while (steady_clock::now() < deadline) {
    std::ifstream in(absl::StrCat("/proc/", s.pid, "/stat"));
    std::stringstream stat;
    stat << in.rdbuf();
    // The state follows the command name in parentheses: "T" is stopped.
    const std::string text = stat.str();
    const size_t end = text.rfind(") ");
    if (end != std::string::npos && text.compare(end + 2, 1, "T") == 0) return;
    std::this_thread::sleep_for(milliseconds(1));
  }
  FAIL() << s.identity << " (pid " << s.pid << ") did not stop within 2s";
}

class SidecarsTest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("BATON_SIDECARS") == nullptr) {
      GTEST_SKIP() << "BATON_SIDECARS is not set (clients/test starts the sidecars)";
    }
    Settle();
  }

  // Waits until every sidecar runs, has read the Lease and answers, and
  // exactly one leads.
  void Settle() {
    const auto deadline = steady_clock::now() + std::chrono::seconds(20);
    std::string last;
    while (steady_clock::now() < deadline) {
      fx_ = ReadFixture();
      int leaders = 0;
      bool all = true;
      for (size_t i = 0; i < fx_.sidecars.size() && all; ++i) {
        absl::StatusOr<Leadership> l = Connect(fx_.sidecars[i])->GetLeadership();
        all = l.ok() && l->identity == fx_.sidecars[i].identity && l->observed;
        if (all && l->is_leader) {
          ++leaders;
          leader_ = static_cast<int>(i);
        }
        if (!l.ok()) last = l.status().ToString();
      }
      if (all && leaders == 1) return;
      std::this_thread::sleep_for(milliseconds(100));
    }
    FAIL() << "sidecars did not settle in 20s: " << last;
  }

  Fixture fx_;
  int leader_ = -1;
};

TEST_F(SidecarsTest, LeaderGetsItsTokenAndFollowersAreRefused) {
  std::unique_ptr<Client> leader = Connect(fx_.sidecars[leader_]);
  absl::StatusOr<Leadership> l = leader->GetLeadership();
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->is_leader && l->observed);
  EXPECT_EQ(l->holder_identity, l->identity);
  EXPECT_GT(l->Remaining(), absl::ZeroDuration());
  EXPECT_LE(l->valid_for, fx_.renew_deadline);
  EXPECT_TRUE(l->acquire_time.has_value());
  EXPECT_EQ(l->lease_duration, fx_.lease_duration);
  EXPECT_EQ(leader->RequireLeader(absl::Milliseconds(500)).value_or(-1), l->fencing_token);
  absl::Status too_long = leader->RequireLeader(fx_.renew_deadline + absl::Seconds(1)).status();
  EXPECT_TRUE(IsNotLeader(too_long)) << too_long;

  for (size_t i = 0; i < fx_.sidecars.size(); ++i) {
    if (static_cast<int>(i) == leader_) continue;
    std::unique_ptr<Client> follower = Connect(fx_.sidecars[i]);
    absl::StatusOr<Leadership> f = follower->GetLeadership();
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_FALSE(f->is_leader);
    EXPECT_EQ(f->holder_identity, l->identity);
    EXPECT_EQ(f->fencing_token, l->fencing_token);
    EXPECT_EQ(f->Remaining(), absl::ZeroDuration());
    EXPECT_EQ(follower->IsLeader().value_or(true), false);
    absl::Status refused = follower->RequireLeader(absl::ZeroDuration()).status();
    EXPECT_TRUE(IsNotLeader(refused)) << refused;
    EXPECT_NE(refused.message().find(l->identity), absl::string_view::npos) << refused;
  }
}

TEST_F(SidecarsTest, WatchSeesAHandoverWithAHigherToken) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Watch>> watches;
  for (const Sidecar& s : fx_.sidecars) {
    clients.push_back(Connect(s));
    watches.push_back(clients.back()->Watch());
  }
  int32_t before = -1;
  for (size_t i = 0; i < watches.size(); ++i) {
    absl::StatusOr<Leadership> first = watches[i]->Next(absl::Seconds(5));
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->is_leader, static_cast<int>(i) == leader_);
    if (first->is_leader) before = first->fencing_token;
  }
  ASSERT_EQ(clients[leader_]->Resign().value_or(false), true);

  // The old leader's watch says it stepped down; a successor's says it leads
  // with a higher token.
  absl::StatusOr<Leadership> stepped = watches[leader_]->Next(absl::Seconds(5));
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  EXPECT_FALSE(stepped->is_leader);
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  bool handed_over = false;
  while (!handed_over && steady_clock::now() < deadline) {
    for (size_t i = 0; i < watches.size() && !handed_over; ++i) {
      if (static_cast<int>(i) == leader_) continue;
      absl::StatusOr<Leadership> l = watches[i]->Next(absl::Milliseconds(100));
      if (l.status().code() == absl::StatusCode::kDeadlineExceeded) continue;
      ASSERT_TRUE(l.ok()) << l.status();
      if (l->is_leader) {
        EXPECT_GT(l->fencing_token, before);
        handed_over = true;
      }
    }
  }
  EXPECT_TRUE(handed_over) << "no follower's watch saw it take over";
}

TEST_F(SidecarsTest, RequireLeaderFailsAfterTheLeaderIsPausedPastItsValidity) {
  const Sidecar s = fx_.sidecars[leader_];
  // Long enough to outlast the pause: the question is asked while the sidecar
  // is stopped and answered by its first act on waking.
  std::unique_ptr<Client> client = Connect(s, absl::Seconds(20));
  absl::StatusOr<int32_t> token = client->RequireLeader(absl::ZeroDuration());
  ASSERT_TRUE(token.ok()) << token.status();
  std::unique_ptr<Watch> watch = client->Watch();
  ASSERT_TRUE(watch->Next(absl::Seconds(5)).value_or(Leadership()).is_leader);

  Signal(s, SIGSTOP);
  const auto paused = steady_clock::now();
  // The watch gives leadership up by the clock alone.
  absl::StatusOr<Leadership> expired = watch->Next(fx_.renew_deadline + absl::Seconds(1));
  const absl::Duration took = absl::FromChrono(steady_clock::now() - paused);
  EXPECT_TRUE(expired.ok() && !expired->is_leader) << expired.status();
  EXPECT_LE(took, fx_.renew_deadline + absl::Milliseconds(300));

  absl::StatusOr<int32_t> asked_while_paused;
  std::thread asker([&] { asked_while_paused = client->RequireLeader(absl::ZeroDuration()); });
  std::this_thread::sleep_for(absl::ToChronoMilliseconds(fx_.lease_duration + absl::Seconds(1)));
  Signal(s, SIGCONT);
  asker.join();
  EXPECT_TRUE(IsNotLeader(asked_while_paused.status())) << asked_while_paused.status();
  EXPECT_TRUE(IsNotLeader(client->RequireLeader(absl::ZeroDuration()).status()));

  const int old_leader = leader_;
  Settle();
  EXPECT_NE(leader_, old_leader);
  EXPECT_GT(Connect(fx_.sidecars[leader_])->RequireLeader(absl::ZeroDuration()).value_or(-1),
            *token);
}

TEST_F(SidecarsTest, ClientReconnectsAfterTheSidecarRestarts) {
  const Sidecar s = fx_.sidecars[leader_];
  std::unique_ptr<Client> client = Connect(s);
  std::unique_ptr<Watch> watch = client->Watch();
  ASSERT_TRUE(watch->Next(absl::Seconds(5)).ok());

  Signal(s, SIGKILL);
  bool outage = false;
  std::string identity;
  // The fixture restarts it after 0.5s; the client must notice within its
  // backoff (0.5s max here), not gRPC's default minutes.
  const auto deadline = steady_clock::now() + std::chrono::seconds(8);
  while (identity.empty() && steady_clock::now() < deadline) {
    absl::StatusOr<Leadership> l = watch->Next(absl::Seconds(1));
    if (l.status().code() == absl::StatusCode::kUnavailable) {
      if (!outage) {
        EXPECT_EQ(client->GetLeadership().status().code(), absl::StatusCode::kUnavailable);
      }
      outage = true;
    } else if (l.ok()) {
      EXPECT_FALSE(l->is_leader && l->identity == s.identity);
      if (l->identity != s.identity) identity = l->identity;
    }
  }
  EXPECT_TRUE(outage) << "the watch did not report the outage";
  ASSERT_FALSE(identity.empty()) << "the watch never reconnected";
  absl::StatusOr<Leadership> now = client->GetLeadership();
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->identity, identity);
  EXPECT_EQ(ReadFixture().sidecars[leader_].identity, identity);
  conformance::Passed("restarting-sidecar");
}

TEST_F(SidecarsTest, AcknowledgeStepDownGivesBackThisClientsPromisesOnly) {
  std::unique_ptr<Client> client = Connect(fx_.sidecars[leader_]);
  absl::StatusOr<Leadership> l = client->GetLeadership();
  ASSERT_TRUE(l.ok() && l->is_leader) << l.status();
  // Another term's acknowledgement is ignored.
  EXPECT_EQ(client->AcknowledgeStepDown(l->fencing_token + 1).value_or(true), false);
  EXPECT_EQ(client->AcknowledgeStepDown(l->fencing_token).value_or(false), true);
  EXPECT_EQ(client->AcknowledgeStepDown(l->fencing_token).value_or(true), false);
  EXPECT_EQ(Connect(fx_.sidecars[leader_])->AcknowledgeStepDown(l->fencing_token).value_or(true),
            false);
}

TEST_F(SidecarsTest, SigtermHandoverCarriesRevisionsAndKeepsAPollersPromises) {
  const Sidecar old = fx_.sidecars[leader_];
  absl::StatusOr<Leadership> before = Connect(old)->GetLeadership();
  ASSERT_TRUE(before.ok()) << before.status();
  const BootClock::time_point now = BootClock::now();
  EXPECT_GT(before->fencing_revision, 0);
  EXPECT_GT(before->valid_until, now);
  EXPECT_LE(before->valid_until, now + absl::ToChronoNanoseconds(fx_.renew_deadline));

  // An application that polls the leader and never acknowledges.
  std::atomic<bool> polling{true};
  BootClock::time_point last_promise{};
  std::thread poller([&] {
    std::unique_ptr<Client> client = Connect(old);
    while (polling) {
      absl::StatusOr<Leadership> l = client->GetLeadership();
      if (l.ok() && l->is_leader) last_promise = std::max(last_promise, l->valid_until);
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Watch>> watches;
  for (const Sidecar& s : fx_.sidecars) {
    clients.push_back(Connect(s));
    watches.push_back(clients.back()->Watch());
    ASSERT_TRUE(watches.back()->Next(absl::Seconds(5)).ok());
  }
  std::this_thread::sleep_for(milliseconds(300));

  Signal(old, SIGTERM);
  std::optional<Leadership> next;
  bool stepped_down = false;
  BootClock::time_point seen{}, old_promise{};  // old_promise: the old leader's watch's last
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (!(next.has_value() && stepped_down) && steady_clock::now() < deadline) {
    for (size_t i = 0; i < watches.size(); ++i) {
      absl::StatusOr<Leadership> l = watches[i]->Next(absl::Milliseconds(20));
      if (!l.ok()) continue;  // the old leader's stream ends when it exits
      if (static_cast<int>(i) == leader_ && l->identity == old.identity) {
        if (l->is_leader) old_promise = std::max(old_promise, l->valid_until);
        stepped_down = stepped_down || l->stepping_down || !l->is_leader;
      } else if (static_cast<int>(i) != leader_ && l->is_leader && !next.has_value()) {
        seen = BootClock::now();
        next = *l;
      }
    }
  }
  polling = false;
  poller.join();
  ASSERT_TRUE(next.has_value()) << "no follower took over after SIGTERM of the leader";
  EXPECT_TRUE(stepped_down) << "the old leader's watch never said it stepped down";
  EXPECT_GT(next->fencing_token, before->fencing_token);
  EXPECT_GT(next->fencing_revision, before->fencing_revision);
  // The poller never acknowledged: its last promise had to lapse first; and
  // so did the last one the old leader's watch delivered.
  EXPECT_GE(absl::FromChrono(seen - last_promise), absl::ZeroDuration())
      << "the successor led before the old leader's last promise to a poller lapsed";
  EXPECT_GE(absl::FromChrono(seen - old_promise), absl::ZeroDuration())
      << "the successor led before the old leader's watched promise lapsed";
  conformance::Passed("watch-through-handover");
}

TEST_F(SidecarsTest, RunWhileLeaderAcknowledgesSoTheHandoverIsFast) {
  struct Started {
    int index;
    Leadership term;
    BootClock::time_point at;
  };
  absl::Mutex mu;
  std::vector<Started> started;                                      // guarded by mu
  std::vector<BootClock::time_point> returned(fx_.sidecars.size());  // guarded by mu
  absl::Notification stop;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::thread> runners;
  for (size_t i = 0; i < fx_.sidecars.size(); ++i) {
    clients.push_back(Connect(fx_.sidecars[i]));
    const Client& client = *clients.back();
    runners.emplace_back([&, i, &client = client] {
      client
          .RunWhileLeader(
              [&, i](const Leadership& term, const absl::Notification& cancelled) {
                {
                  absl::MutexLock lock(&mu);
                  started.push_back({static_cast<int>(i), term, BootClock::now()});
                }
                cancelled.WaitForNotification();
                std::this_thread::sleep_for(milliseconds(20));  // the work winds down
                absl::MutexLock lock(&mu);
                returned[i] = BootClock::now();
                return absl::OkStatus();
              },
              stop)
          .IgnoreError();
    });
  }
  auto count = [&]() {
    absl::MutexLock lock(&mu);
    return started.size();
  };
  auto wait_for = [&](size_t n) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (count() < n && steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return count() >= n;
  };
  const bool first_started = wait_for(1);
  // Let the promises Settle() was given lapse: it never acknowledges.
  std::this_thread::sleep_for(absl::ToChronoMilliseconds(fx_.renew_deadline) + milliseconds(200));
  // A fresh promise to the client running the work: only its acknowledgement
  // lets the next leader start before it lapses.
  const absl::StatusOr<Leadership> promise = clients[leader_]->GetLeadership();
  const BootClock::time_point sent = BootClock::now();
  Signal(fx_.sidecars[leader_], SIGTERM);
  const bool next_started = first_started && wait_for(2);
  stop.Notify();
  for (std::thread& r : runners) r.join();

  ASSERT_TRUE(first_started) << "no leader work started";
  ASSERT_TRUE(next_started) << "no other sidecar's work started after SIGTERM of the leader";
  absl::MutexLock lock(&mu);
  const Started& first = started[0];
  const Started& next = started[1];
  EXPECT_EQ(first.index, leader_);
  EXPECT_NE(next.index, leader_);
  EXPECT_GT(next.term.fencing_token, first.term.fencing_token);
  EXPECT_GT(next.term.fencing_revision, first.term.fencing_revision);
  EXPECT_NE(returned[first.index], BootClock::time_point{}) << "the old work never returned";
  EXPECT_GE(absl::FromChrono(next.at - returned[first.index]), absl::ZeroDuration())
      << "the new work started before the old one returned";
  const absl::Duration handover = absl::FromChrono(next.at - sent);
  EXPECT_LT(handover, fx_.renew_deadline / 2) << "handover took " << handover;
  ASSERT_TRUE(promise.ok() && promise->is_leader) << promise.status();
  EXPECT_LT(next.at, promise->valid_until) << "the next leader waited for the acknowledged promise";
  std::printf("SIGTERM -> new leader's work started: %s\n", absl::FormatDuration(handover).c_str());
  conformance::Passed("step-down-ack");
}

// The conformance scenario require-leader-after-pause: while the leader's
// sidecar is stopped for longer than the Lease, its old answer lapses and
// RequireLeader fails as unavailable; afterwards a higher token leads.
TEST_F(SidecarsTest, RequireLeaderNeverReturnsATokenWhileTheSidecarIsPaused) {
  const Sidecar s = fx_.sidecars[leader_];
  std::unique_ptr<Client> client = Connect(s);
  const absl::StatusOr<Leadership> answer = client->GetLeadership();
  ASSERT_TRUE(answer.ok() && answer->is_leader) << answer.status();
  Signal(s, SIGSTOP);
  AwaitStopped(s);  // on failure the checks below fail too, and SIGCONT follows
  const auto pause_end =
      steady_clock::now() + absl::ToChronoMilliseconds(fx_.lease_duration + absl::Seconds(1.5));
  while (steady_clock::now() < pause_end) {
    const absl::StatusOr<int32_t> token = client->RequireLeader(absl::ZeroDuration());
    if (token.status().code() != absl::StatusCode::kUnavailable) {
      ADD_FAILURE() << "RequireLeader during the pause: " << token.status() << " "
                    << token.value_or(-1);
      break;
    }
  }
  EXPECT_EQ(answer->Remaining(), absl::ZeroDuration());
  Signal(s, SIGCONT);

  bool paused_ok = false, higher = false;
  const auto deadline = steady_clock::now() + std::chrono::seconds(5);
  while (!(paused_ok && higher) && steady_clock::now() < deadline) {
    const absl::StatusOr<Leadership> l = client->GetLeadership();
    paused_ok =
        paused_ok || (l.ok() && (!l->is_leader || l->fencing_token > answer->fencing_token));
    for (const Sidecar& other : ReadFixture().sidecars) {
      const absl::StatusOr<Leadership> o = Connect(other, absl::Milliseconds(500))->GetLeadership();
      higher = higher || (o.ok() && o->is_leader && o->fencing_token > answer->fencing_token);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(paused_ok) << "the paused sidecar still answers leader with the old token";
  EXPECT_TRUE(higher) << "no sidecar leads with a token above " << answer->fencing_token;
  conformance::Passed("require-leader-after-pause");
}

TEST_F(SidecarsTest, AClientExpectingAnotherLeaseRefusesTheAnswers) {
  const Sidecar& s = fx_.sidecars[leader_];
  ClientOptions wrong_options = FastOptions(s);
  wrong_options.lease_name = "not-this-lease";
  wrong_options.lease_namespace = fx_.namespace_;
  std::unique_ptr<Client> wrong = *Client::Create(wrong_options);
  const absl::StatusOr<Leadership> refused = wrong->GetLeadership();
  ASSERT_TRUE(IsWrongLease(refused.status())) << refused.status();
  EXPECT_FALSE(IsNotLeader(refused.status()));
  EXPECT_NE(refused.status().message().find(fx_.namespace_ + "/not-this-lease"), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find(fx_.namespace_ + "/" + fx_.lease_name),
            std::string::npos)
      << refused.status();
  const absl::StatusOr<bool> is_leader = wrong->IsLeader();
  EXPECT_TRUE(IsWrongLease(is_leader.status())) << is_leader.status();
  EXPECT_TRUE(IsWrongLease(wrong->RequireLeader(absl::ZeroDuration()).status()));
  const absl::StatusOr<Leadership> watched = wrong->Watch()->Next(absl::Seconds(5));
  EXPECT_TRUE(IsWrongLease(watched.status())) << watched.status();

  ClientOptions right_options = FastOptions(s);
  right_options.lease_name = fx_.lease_name;
  right_options.lease_namespace = fx_.namespace_;
  const absl::StatusOr<Leadership> answer = (*Client::Create(right_options))->GetLeadership();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_TRUE(answer->is_leader);
  conformance::Passed("lease-identity");
}

}  // namespace
}  // namespace baton::client

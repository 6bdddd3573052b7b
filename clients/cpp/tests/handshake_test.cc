// The step-down handshake and the deadlines of answers, against a fake
// sidecar (a gRPC server in this process): client ids on every question, the
// bound RequireLeader asks for, deadlines from valid_until_boottime, and
// RunWhileLeader's order — work cancelled, work returned, then acknowledged.
#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "baton/client/client.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace baton::client {
namespace {

void SetDuration(absl::Duration d, google::protobuf::Duration* out) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  out->set_seconds(ns / 1000000000);
  out->set_nanos(static_cast<int32_t>(ns % 1000000000));
}

absl::Duration BootNow() { return absl::FromChrono(BootClock::now().time_since_epoch()); }

// What happened, in order, across threads.
class Journal {
 public:
  void Add(std::string event) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(event));
  }
  // Whether `event` happened within `timeout`.
  bool WaitFor(const std::string& event, absl::Duration timeout = absl::Seconds(5)) {
    absl::MutexLock lock(&mu_);
    auto seen = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return std::find(events_.begin(), events_.end(), event) != events_.end();
    };
    return mu_.AwaitWithTimeout(absl::Condition(&seen), timeout);
  }
  // The work's events and the acknowledgements, in order.
  std::vector<std::string> WorkAndAcks() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const std::string& e : events_) {
      if (e.rfind("work", 0) == 0 || e.rfind("ack", 0) == 0) out.push_back(e);
    }
    return out;
  }
  std::string All() {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const std::string& e : events_) absl::StrAppend(&out, e, "; ");
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

struct FakeOptions {
  absl::Duration valid_for = absl::Seconds(10);
  // How long an answer waits between being produced and being sent.
  absl::Duration delay = absl::ZeroDuration();
  // Whether answers carry valid_until_boottime (older sidecars send none).
  bool send_deadline = true;
};

// Leads with token 5 until step_down is notified, then says it is stepping
// down; records who asks, the bound each question asks for and the
// acknowledgements.
class FakeSidecar final : public v1::LeaderElection::Service {
 public:
  explicit FakeSidecar(FakeOptions options) : options_(options) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    addr_ = absl::StrCat("127.0.0.1:", port);
  }
  ~FakeSidecar() override {
    if (!step_down.HasBeenNotified()) step_down.Notify();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  const std::string& addr() const { return addr_; }

  grpc::Status GetLeadership(grpc::ServerContext*, const v1::GetLeadershipRequest* request,
                             v1::Leadership* response) override {
    RecordBound(request->has_max_valid_for(), request->max_valid_for());
    journal.Add(absl::StrCat("get ", request->client_id()));
    *response = Answer();
    return grpc::Status::OK;
  }

  grpc::Status WatchLeadership(grpc::ServerContext* context,
                               const v1::WatchLeadershipRequest* request,
                               grpc::ServerWriter<v1::WatchLeadershipResponse>* writer) override {
    RecordBound(request->has_max_valid_for(), request->max_valid_for());
    journal.Add(absl::StrCat("watch ", request->client_id()));
    v1::WatchLeadershipResponse message;
    *message.mutable_leadership() = Answer();
    writer->Write(message);
    while (!step_down.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      if (context->IsCancelled()) return grpc::Status::OK;
    }
    journal.Add("stepping down");
    v1::Leadership* l = message.mutable_leadership();
    l->Clear();
    l->set_identity("me");
    l->set_holder_identity("me");
    l->set_fencing_token(5);
    l->set_observed(true);
    l->set_stepping_down(true);
    writer->Write(message);
    while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(50));
    return grpc::Status::OK;
  }

  grpc::Status AcknowledgeStepDown(grpc::ServerContext*,
                                   const v1::AcknowledgeStepDownRequest* request,
                                   v1::AcknowledgeStepDownResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      acked_.push_back(request->has_valid_until_boottime()
                           ? absl::Seconds(request->valid_until_boottime().seconds()) +
                                 absl::Nanoseconds(request->valid_until_boottime().nanos())
                           : -absl::InfiniteDuration());
    }
    journal.Add(absl::StrCat("ack ", request->client_id(), " ", request->fencing_token()));
    response->set_acknowledged(true);
    return grpc::Status::OK;
  }

  // The deadline of the last leader answer given.
  absl::Duration LastGiven() {
    absl::MutexLock lock(&mu_);
    return given_.empty() ? absl::ZeroDuration() : given_.back();
  }
  // The deadline each acknowledgement named (-inf: none).
  std::vector<absl::Duration> Acked() {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  // The max_valid_for each GetLeadership and WatchLeadership asked for
  // (-inf: none).
  std::vector<absl::Duration> Bounds() {
    absl::MutexLock lock(&mu_);
    return bounds_;
  }

  Journal journal;
  absl::Notification step_down;

 private:
  void RecordBound(bool has, const google::protobuf::Duration& d) {
    absl::MutexLock lock(&mu_);
    bounds_.push_back(has ? absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos())
                          : -absl::InfiniteDuration());
  }

  v1::Leadership Answer() {
    v1::Leadership l;
    l.set_is_leader(true);
    l.set_identity("me");
    l.set_holder_identity("me");
    l.set_fencing_token(5);
    l.set_fencing_revision(4711);
    l.set_observed(true);
    SetDuration(options_.valid_for, l.mutable_valid_for());
    if (options_.send_deadline) {
      // Whole nanoseconds, as the wire carries them; each answer later than
      // the last, as if the sidecar renewed before each.
      absl::Duration deadline = absl::Trunc(BootNow() + options_.valid_for, absl::Nanoseconds(1));
      {
        absl::MutexLock lock(&mu_);
        if (!given_.empty()) deadline = std::max(deadline, given_.back() + absl::Nanoseconds(1));
        given_.push_back(deadline);
      }
      SetDuration(deadline, l.mutable_valid_until_boottime());
    }
    absl::SleepFor(options_.delay);
    return l;
  }

  const FakeOptions options_;
  absl::Mutex mu_;
  std::vector<absl::Duration> given_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> acked_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> bounds_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> server_;
  std::string addr_;
};

std::unique_ptr<Client> Connect(const FakeSidecar& fake, std::string client_id = "",
                                absl::Duration heartbeat = absl::Seconds(1)) {
  ClientOptions options;
  options.grpc_addr = fake.addr();
  options.client_id = std::move(client_id);
  options.heartbeat_interval = heartbeat;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return *std::move(client);
}

TEST(DeadlineTest, AQueuedAnswerDoesNotOverPromise) {
  FakeSidecar fake({.valid_for = absl::Seconds(1), .delay = absl::Milliseconds(400)});
  std::unique_ptr<Client> client = Connect(fake);
  const BootClock::time_point sent = BootClock::now();
  absl::StatusOr<Leadership> l = client->GetLeadership();
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->fencing_revision, 4711);
  // The 1s promise less the 400ms it sat, not 1s from arrival; and not less
  // than the sidecar gave (it made the answer after the request was sent).
  // Bounds from the request's and the answer's instants, so that a slow
  // machine between here and the check cannot move them.
  EXPECT_LE(l->Remaining(), absl::Milliseconds(600));
  EXPECT_GE(absl::FromChrono(l->valid_until - sent), absl::Seconds(1));
  std::unique_ptr<Watch> watch = client->Watch();
  absl::StatusOr<Leadership> first = watch->Next(absl::Seconds(5));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_LE(first->Remaining(), absl::Milliseconds(600));
}

TEST(DeadlineTest, AnOlderSidecarsAnswerCountsFromWhenTheRequestWasSent) {
  FakeSidecar fake(
      {.valid_for = absl::Seconds(1), .delay = absl::Milliseconds(300), .send_deadline = false});
  std::unique_ptr<Client> client = Connect(fake);
  const BootClock::time_point sent = BootClock::now();
  absl::StatusOr<Leadership> l = client->GetLeadership();
  ASSERT_TRUE(l.ok()) << l.status();
  const absl::Duration counted = absl::FromChrono(l->valid_until - sent);
  EXPECT_GE(counted, absl::Seconds(1));
  EXPECT_LT(counted, absl::Milliseconds(1050));
}

TEST(ClientIdTest, EveryQuestionCarriesIt) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake);
  std::unique_ptr<Client> other = Connect(fake);
  EXPECT_EQ(client->client_id().size(), 16u);
  EXPECT_NE(client->client_id(), other->client_id());
  ASSERT_TRUE(client->GetLeadership().ok());
  EXPECT_TRUE(fake.journal.WaitFor("get " + client->client_id()));
  ASSERT_TRUE(client->Watch()->Next(absl::Seconds(5)).ok());
  EXPECT_TRUE(fake.journal.WaitFor("watch " + client->client_id()));
  EXPECT_EQ(client->AcknowledgeStepDown(5).value_or(false), true);
  EXPECT_TRUE(fake.journal.WaitFor(absl::StrCat("ack ", client->client_id(), " 5")));

  ClientOptions bad;
  for (const char* id : {"has space", "a/b", "x:y"}) {
    bad.client_id = id;
    EXPECT_EQ(Client::Create(bad).status().code(), absl::StatusCode::kInvalidArgument) << id;
  }
  bad.client_id = std::string(65, 'a');
  EXPECT_EQ(Client::Create(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RequireLeaderTest, AsksForMinValidityPlusTheSlackAndNothingElseDoes) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake);
  absl::StatusOr<int32_t> token = client->RequireLeader(absl::Milliseconds(2500));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, 5);
  token = client->RequireLeader(absl::ZeroDuration());
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_TRUE(client->GetLeadership().ok());
  ASSERT_TRUE(client->IsLeader().ok());
  std::unique_ptr<Watch> watch = client->Watch();
  ASSERT_TRUE(watch->Next(absl::Seconds(5)).ok());
  EXPECT_EQ(kRequireLeaderSlack, absl::Seconds(1));
  const absl::Duration none = -absl::InfiniteDuration();
  EXPECT_EQ(fake.Bounds(), (std::vector<absl::Duration>{absl::Milliseconds(3500), absl::Seconds(1),
                                                        none, none, none}))
      << "RequireLeader(2.5s), RequireLeader(0), GetLeadership, IsLeader, Watch";
}

TEST(AcknowledgementTest, NamesTheLatestDeadlineThisClientReceived) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake, "shared");
  ASSERT_TRUE(client->GetLeadership().ok());
  absl::StatusOr<Leadership> last = client->GetLeadership();
  ASSERT_TRUE(last.ok());
  const absl::Duration mine = fake.LastGiven();
  EXPECT_EQ(last->valid_until_boottime, mine);
  // Another process with the same client_id is answered later; this
  // client's acknowledgement does not cover that answer.
  std::unique_ptr<Client> other = Connect(fake, "shared");
  ASSERT_TRUE(other->GetLeadership().ok());
  ASSERT_GT(fake.LastGiven(), mine);
  ASSERT_TRUE(client->AcknowledgeStepDown(5).ok());
  // A term it was never answered in: it names nothing.
  ASSERT_TRUE(client->AcknowledgeStepDown(4).ok());
  // Or the deadline it is given.
  ASSERT_TRUE(client->AcknowledgeStepDown(5, absl::Seconds(42)).ok());
  EXPECT_EQ(fake.Acked(),
            (std::vector<absl::Duration>{mine, absl::ZeroDuration(), absl::Seconds(42)}));
}

// Leader work that records its life: started, cancelled, then (100ms later,
// winding down) returned.
LeaderWork RecordingWork(Journal& journal) {
  return [&journal](const Leadership& term, const absl::Notification& cancelled) {
    EXPECT_EQ(term.fencing_token, 5);
    EXPECT_EQ(term.fencing_revision, 4711);
    journal.Add("work started");
    cancelled.WaitForNotification();
    journal.Add("work cancelled");
    absl::SleepFor(absl::Milliseconds(100));
    journal.Add("work returned");
    return absl::CancelledError("stopped");
  };
}

// Runs client.RunWhileLeader on a thread until the runner is destroyed.
class Runner {
 public:
  Runner(const Client& client, LeaderWork work)
      : thread_([this, &client, work = std::move(work)] {
          status_ = client.RunWhileLeader(work, stop_);
        }) {}
  ~Runner() { Stop().IgnoreError(); }
  absl::Status Stop() {
    if (!stop_.HasBeenNotified()) stop_.Notify();
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  absl::Notification stop_;
  absl::Status status_;
  std::thread thread_;
};

void ExpectCancelledReturnedAcked(Journal& journal, const std::string& client_id) {
  const std::vector<std::string> events = journal.WorkAndAcks();
  auto it = std::find(events.begin(), events.end(), "work cancelled");
  ASSERT_GE(std::distance(it, events.end()), 3) << journal.All();
  EXPECT_EQ(*(it + 1), "work returned") << journal.All();
  EXPECT_EQ(*(it + 2), "ack " + client_id + " 5") << journal.All();
}

TEST(RunWhileLeaderTest, CancelsJoinsThenAcknowledgesWhenTheSidecarStepsDown) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake, "app-1");
  Runner runner(*client, RecordingWork(fake.journal));
  ASSERT_TRUE(fake.journal.WaitFor("work started")) << fake.journal.All();
  fake.step_down.Notify();
  ASSERT_TRUE(fake.journal.WaitFor("ack app-1 5")) << fake.journal.All();
  ExpectCancelledReturnedAcked(fake.journal, "app-1");
  EXPECT_TRUE(runner.Stop().ok());
}

TEST(RunWhileLeaderTest, AcknowledgesUpToTheLastAnswerItReceived) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake, "app-0");
  Runner runner(*client, RecordingWork(fake.journal));
  ASSERT_TRUE(fake.journal.WaitFor("work started")) << fake.journal.All();
  fake.step_down.Notify();
  ASSERT_TRUE(fake.journal.WaitFor("ack app-0 5")) << fake.journal.All();
  EXPECT_TRUE(runner.Stop().ok());
  EXPECT_EQ(fake.Acked(), std::vector<absl::Duration>{fake.LastGiven()});
}

TEST(RunWhileLeaderTest, EndsTheWorkWhenTheGuaranteeRunsOut) {
  FakeSidecar fake({.valid_for = absl::Milliseconds(300)});
  std::unique_ptr<Client> client = Connect(fake, "app-2", absl::Seconds(10));
  Runner runner(*client, RecordingWork(fake.journal));
  ASSERT_TRUE(fake.journal.WaitFor("work started")) << fake.journal.All();
  const absl::Time started = absl::Now();
  ASSERT_TRUE(fake.journal.WaitFor("work cancelled")) << fake.journal.All();
  EXPECT_LT(absl::Now() - started, absl::Milliseconds(450));
  ASSERT_TRUE(fake.journal.WaitFor("ack app-2 5")) << fake.journal.All();
}

TEST(RunWhileLeaderTest, AcknowledgesWhenStopped) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake, "app-3");
  Runner runner(*client, RecordingWork(fake.journal));
  ASSERT_TRUE(fake.journal.WaitFor("work started")) << fake.journal.All();
  EXPECT_TRUE(runner.Stop().ok());
  ExpectCancelledReturnedAcked(fake.journal, "app-3");
}

TEST(RunWhileLeaderTest, ReturnsTheErrorOfWorkThatFailsWhileLeading) {
  FakeSidecar fake({});
  std::unique_ptr<Client> client = Connect(fake, "app-4");
  absl::Notification stop;
  const absl::Status status = client->RunWhileLeader(
      [](const Leadership&, const absl::Notification&) {
        return absl::DataLossError("the store is gone");
      },
      stop);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_TRUE(fake.journal.WaitFor("ack app-4 5")) << fake.journal.All();
}

}  // namespace
}  // namespace baton::client

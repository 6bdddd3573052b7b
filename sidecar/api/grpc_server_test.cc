#include "sidecar/api/grpc_server.h"

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "sidecar/api/testing/api_test_env.h"

namespace baton {
namespace {

using Event = v1::WatchLeadershipResponse::Event;
using testing::ApiTestEnv;
using testing::Following;
using testing::kOther;
using testing::Leading;

// One WatchLeadership stream read on its own thread into a queue, so tests
// can wait for the next message with a timeout.
class WatchClient {
 public:
  WatchClient(v1::LeaderElection::Stub* stub, absl::Duration heartbeat = absl::ZeroDuration(),
              const std::string& client_id = "") {
    v1::WatchLeadershipRequest request;
    request.set_client_id(client_id);
    if (heartbeat > absl::ZeroDuration()) {
      *request.mutable_heartbeat_interval() =
          google::protobuf::util::TimeUtil::NanosecondsToDuration(
              absl::ToInt64Nanoseconds(heartbeat));
    }
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    reader_ = stub->WatchLeadership(&context_, request);
    thread_ = std::thread([this] {
      v1::WatchLeadershipResponse message;
      while (reader_->Read(&message)) {
        absl::MutexLock lock(&mu_);
        messages_.push_back(message);
      }
      grpc::Status status = reader_->Finish();
      absl::MutexLock lock(&mu_);
      status_ = status;
    });
  }
  ~WatchClient() {
    context_.TryCancel();
    thread_.join();
  }

  // The next message, or nullopt if none arrives within `timeout`.
  std::optional<v1::WatchLeadershipResponse> Next(absl::Duration timeout = absl::Seconds(5)) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !messages_.empty() || status_.has_value();
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    if (messages_.empty()) return std::nullopt;
    v1::WatchLeadershipResponse m = messages_.front();
    messages_.pop_front();
    return m;
  }

  // The stream's final status, once it ended (within `timeout`).
  std::optional<grpc::Status> Status(absl::Duration timeout = absl::Seconds(5)) {
    absl::MutexLock lock(&mu_);
    auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return status_.has_value(); };
    mu_.AwaitWithTimeout(absl::Condition(&ended), timeout);
    return status_;
  }

  void Cancel() { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::WatchLeadershipResponse>> reader_;
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<v1::WatchLeadershipResponse> messages_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> status_ ABSL_GUARDED_BY(mu_);
};

// grpc.health.v1.Health/Check, encoded by hand: Debian ships no health.proto.
// Request: field 1 (service, string). Response: field 1 (status, enum).
enum HealthStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kCallFailed = -1 };
HealthStatus CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& service) {
  std::string request;
  if (!service.empty()) {
    request.push_back('\x0a');
    request.push_back(static_cast<char>(service.size()));
    request += service;
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  absl::Mutex mu;
  std::optional<grpc::Status> status;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request_buffer,
                 &response_buffer, [&](grpc::Status s) {
                   absl::MutexLock lock(&mu);
                   status = s;
                 });
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(
      +[](std::optional<grpc::Status>* s) { return s->has_value(); }, &status));
  if (!status->ok()) return kCallFailed;
  std::vector<grpc::Slice> slices;
  (void)response_buffer.Dump(&slices);
  std::string response;
  for (const grpc::Slice& s : slices)
    response.append(reinterpret_cast<const char*>(s.begin()), s.size());
  if (response.empty()) return kUnknown;
  return response.size() == 2 && response[0] == '\x08' ? static_cast<HealthStatus>(response[1])
                                                       : kCallFailed;
}

class GrpcServerTest : public ::testing::Test {
 protected:
  static GrpcServerOptions TestOptions() {
    GrpcServerOptions options;
    options.address = "127.0.0.1:0";
    options.refresh_interval = absl::Milliseconds(20);
    options.min_heartbeat_interval = absl::Milliseconds(20);
    return options;
  }

  void StartServer(GrpcServerOptions options = TestOptions()) {
    server_ = std::make_unique<GrpcServer>(std::move(options), &env_.context);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::LeaderElection::NewStub(channel_);
  }

  void SetUp() override { StartServer(); }

  v1::Leadership GetLeadership(const std::string& client_id = "") {
    grpc::ClientContext context;
    v1::GetLeadershipRequest request;
    request.set_client_id(client_id);
    v1::Leadership response;
    EXPECT_TRUE(stub_->GetLeadership(&context, request, &response).ok());
    return response;
  }

  grpc::Status Acknowledge(const std::string& client_id, int32_t token,
                           bool* acknowledged = nullptr) {
    grpc::ClientContext context;
    v1::AcknowledgeStepDownRequest request;
    request.set_client_id(client_id);
    request.set_fencing_token(token);
    v1::AcknowledgeStepDownResponse response;
    grpc::Status status = stub_->AcknowledgeStepDown(&context, request, &response);
    if (acknowledged != nullptr) *acknowledged = response.acknowledged();
    return status;
  }

  // Leading with `token` for 10s; returns the snapshot's leader_until.
  MonoTime Lead(int64_t token) {
    const Leadership l = Leading(env_.clock, token, absl::Seconds(10));
    env_.publisher.Publish(l);
    return l.leader_until;
  }

  std::optional<MonoTime> Outstanding(int64_t token) {
    return env_.publisher.OutstandingUntil(token, env_.clock.Monotonic());
  }

  // Polls the health service until `service` reports `want` (or 5s pass).
  bool HealthBecomes(const std::string& service, HealthStatus want) {
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (absl::Now() < deadline) {
      if (CheckHealth(channel_, service) == want) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  ApiTestEnv env_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::LeaderElection::Stub> stub_;
};

TEST_F(GrpcServerTest, GetLeadershipAnswersFromTheSnapshotAtCallTime) {
  EXPECT_FALSE(GetLeadership().is_leader());
  env_.publisher.Publish(Leading(env_.clock, 8, absl::Seconds(10)));
  v1::Leadership l = GetLeadership();
  EXPECT_TRUE(l.is_leader());
  EXPECT_EQ(l.fencing_token(), 8);
  EXPECT_EQ(l.valid_for().seconds(), 10);
  env_.clock.Advance(absl::Seconds(10));
  EXPECT_FALSE(GetLeadership().is_leader());
}

TEST_F(GrpcServerTest, GetLeadershipToANamedClientIsAPromiseItCanAcknowledge) {
  const MonoTime until = Lead(8);
  const v1::Leadership l = GetLeadership("app-1");
  ASSERT_TRUE(l.is_leader());
  EXPECT_EQ(google::protobuf::util::TimeUtil::DurationToNanoseconds(l.valid_until_boottime()),
            absl::ToInt64Nanoseconds(until.SinceOrigin()));
  EXPECT_EQ(Outstanding(8), until);
  bool acknowledged = false;
  ASSERT_TRUE(Acknowledge("app-1", 8, &acknowledged).ok());
  EXPECT_TRUE(acknowledged);
  EXPECT_FALSE(Outstanding(8));
  ASSERT_TRUE(Acknowledge("app-1", 8, &acknowledged).ok());
  EXPECT_FALSE(acknowledged);
}

TEST_F(GrpcServerTest, AcknowledgeGoesThroughTheHookWhenSet) {
  std::string seen;
  env_.context.hooks.acknowledge = [&](std::string_view client_id, int64_t token) {
    seen = absl::StrCat(absl::string_view(client_id.data(), client_id.size()), "@", token);
    return true;
  };
  bool acknowledged = false;
  ASSERT_TRUE(Acknowledge("app-1", 3, &acknowledged).ok());
  EXPECT_TRUE(acknowledged);
  EXPECT_EQ(seen, "app-1@3");
}

TEST_F(GrpcServerTest, MalformedClientIdsAreInvalidArgument) {
  Lead(8);
  for (const std::string& id : {std::string(65, 'a'), std::string("a b"), std::string("a/b")}) {
    grpc::ClientContext context;
    v1::GetLeadershipRequest request;
    request.set_client_id(id);
    v1::Leadership response;
    EXPECT_EQ(stub_->GetLeadership(&context, request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << id;
    EXPECT_EQ(Acknowledge(id, 8).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << id;
    WatchClient watch(stub_.get(), absl::ZeroDuration(), id);
    std::optional<grpc::Status> status = watch.Status();
    ASSERT_TRUE(status);
    EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT) << id;
    EXPECT_FALSE(watch.Next(absl::ZeroDuration()));
  }
  // Acknowledging needs a name.
  EXPECT_EQ(Acknowledge("", 8).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(Outstanding(8));
}

TEST_F(GrpcServerTest, EveryLeaderWatchMessageIsAPromiseToTheStreamsClient) {
  const MonoTime until = Lead(5);
  WatchClient watch(stub_.get(), absl::Milliseconds(100), "app-1");
  ASSERT_TRUE(watch.Next()->leadership().is_leader());
  EXPECT_EQ(Outstanding(5), until);
  bool acknowledged = false;
  ASSERT_TRUE(Acknowledge("app-1", 5, &acknowledged).ok());
  EXPECT_TRUE(acknowledged);
  EXPECT_FALSE(Outstanding(5));
  // The next heartbeat says leader again, so it promises again.
  std::optional<v1::WatchLeadershipResponse> m = watch.Next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->event(), v1::WatchLeadershipResponse::EVENT_HEARTBEAT);
  EXPECT_TRUE(m->leadership().is_leader());
  EXPECT_EQ(Outstanding(5), until);
}

TEST_F(GrpcServerTest, WatchMessagesAfterStepDownSayNotLeader) {
  Lead(5);
  WatchClient watch(stub_.get(), absl::Milliseconds(20), "app-1");
  ASSERT_TRUE(watch.Next()->leadership().is_leader());
  env_.publisher.StepDown();
  ASSERT_TRUE(Acknowledge("app-1", 5).ok());
  // Whatever was already on its way, every message built after the
  // step-down (the change, then heartbeats) says not leader, and none of
  // them promises anything.
  bool stepped_down = false;
  for (int i = 0; i < 10; ++i) {
    std::optional<v1::WatchLeadershipResponse> m = watch.Next();
    ASSERT_TRUE(m);
    if (stepped_down) {
      EXPECT_FALSE(m->leadership().is_leader());
    }
    if (m->leadership().stepping_down()) {
      EXPECT_FALSE(m->leadership().is_leader());
      stepped_down = true;
    }
  }
  EXPECT_TRUE(stepped_down);
  EXPECT_FALSE(Outstanding(5));
}

TEST_F(GrpcServerTest, WatchSendsTheCurrentStateAtOnce) {
  env_.publisher.Publish(Leading(env_.clock, 3));
  WatchClient watch(stub_.get());
  std::optional<v1::WatchLeadershipResponse> first = watch.Next(absl::Seconds(1));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->event(), v1::WatchLeadershipResponse::EVENT_INITIAL);
  EXPECT_TRUE(first->leadership().is_leader());
  EXPECT_EQ(first->leadership().fencing_token(), 3);
}

TEST_F(GrpcServerTest, WatchSendsEveryChangeOfHolderTokenOrIsLeader) {
  WatchClient watch(stub_.get());
  ASSERT_FALSE(watch.Next()->leadership().observed());

  env_.publisher.Publish(Following(env_.clock, kOther, 4));
  std::optional<v1::WatchLeadershipResponse> m = watch.Next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->event(), v1::WatchLeadershipResponse::EVENT_CHANGED);
  EXPECT_EQ(m->leadership().holder_identity(), kOther);
  EXPECT_FALSE(m->leadership().is_leader());

  env_.publisher.Publish(Leading(env_.clock, 5));
  m = watch.Next();
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->leadership().is_leader());
  EXPECT_EQ(m->leadership().fencing_token(), 5);
}

TEST_F(GrpcServerTest, RenewOnlyChangesAreNotSent) {
  env_.publisher.Publish(Leading(env_.clock, 5));
  WatchClient watch(stub_.get());
  ASSERT_TRUE(watch.Next());
  for (int i = 0; i < 5; ++i) {
    env_.clock.Advance(absl::Seconds(2));
    env_.publisher.Publish(Leading(env_.clock, 5));  // a renew: later times, same holder/token
  }
  EXPECT_FALSE(watch.Next(absl::Milliseconds(300)));
  env_.publisher.Publish(Following(env_.clock, kOther, 6));
  std::optional<v1::WatchLeadershipResponse> m = watch.Next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->leadership().holder_identity(), kOther);
}

TEST_F(GrpcServerTest, WatchSeesTheGuaranteeRunOutWithoutAPublish) {
  env_.publisher.Publish(Leading(env_.clock, 5, absl::Seconds(10)));
  WatchClient watch(stub_.get());
  ASSERT_TRUE(watch.Next()->leadership().is_leader());
  env_.clock.Advance(absl::Seconds(10));
  std::optional<v1::WatchLeadershipResponse> m = watch.Next(absl::Seconds(1));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->event(), v1::WatchLeadershipResponse::EVENT_CHANGED);
  EXPECT_FALSE(m->leadership().is_leader());
}

TEST_F(GrpcServerTest, HeartbeatsArriveWhenNothingChanges) {
  env_.publisher.Publish(Leading(env_.clock, 5, absl::Seconds(10)));
  WatchClient watch(stub_.get(), absl::Milliseconds(100));
  ASSERT_EQ(watch.Next()->event(), v1::WatchLeadershipResponse::EVENT_INITIAL);
  absl::Time last = absl::Now();
  for (int i = 0; i < 3; ++i) {
    env_.clock.Advance(absl::Seconds(1));
    std::optional<v1::WatchLeadershipResponse> m = watch.Next(absl::Milliseconds(500));
    ASSERT_TRUE(m) << "heartbeat " << i;
    EXPECT_EQ(m->event(), v1::WatchLeadershipResponse::EVENT_HEARTBEAT);
    // A heartbeat carries a fresh valid_for.
    EXPECT_EQ(m->leadership().valid_for().seconds(), 10 - (i + 1));
    const absl::Time now = absl::Now();
    EXPECT_LT(now - last, absl::Milliseconds(100 + 150));
    last = now;
  }
}

TEST_F(GrpcServerTest, HeartbeatIntervalIsRaisedToTheMinimum) {
  WatchClient watch(stub_.get(), absl::Microseconds(1));
  ASSERT_TRUE(watch.Next());
  int messages = 0;
  const absl::Time end = absl::Now() + absl::Milliseconds(400);
  while (absl::Now() < end) {
    if (watch.Next(end - absl::Now())) ++messages;
  }
  // The minimum is 20ms (heartbeats may go up to half of it early): ~20-40.
  EXPECT_GE(messages, 5);
  EXPECT_LE(messages, 45);
}

TEST_F(GrpcServerTest, WatchersBeyondTheLimitGetResourceExhausted) {
  server_.reset();
  GrpcServerOptions options = TestOptions();
  options.max_watchers = 3;
  StartServer(options);
  std::vector<std::unique_ptr<WatchClient>> watchers;
  for (int i = 0; i < 3; ++i) {
    watchers.push_back(std::make_unique<WatchClient>(stub_.get()));
    ASSERT_TRUE(watchers.back()->Next());
  }
  WatchClient refused(stub_.get());
  std::optional<grpc::Status> status = refused.Status();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_FALSE(refused.Next(absl::ZeroDuration()));

  watchers.front()->Cancel();
  ASSERT_TRUE(watchers.front()->Status());
  // The slot frees up once the server has seen the cancellation.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  bool admitted = false;
  while (!admitted && absl::Now() < deadline) {
    WatchClient again(stub_.get());
    admitted = again.Next(absl::Seconds(1)).has_value();
  }
  EXPECT_TRUE(admitted);
}

TEST_F(GrpcServerTest, ShutdownSendsSteppingDownThenEndsStreamsWithOk) {
  env_.publisher.Publish(Leading(env_.clock, 5));
  std::vector<std::unique_ptr<WatchClient>> watchers;
  for (int i = 0; i < 10; ++i) {
    watchers.push_back(std::make_unique<WatchClient>(stub_.get()));
    ASSERT_TRUE(watchers.back()->Next());
  }
  // The daemon's order: stop reporting leader, then (release, then) close the
  // servers, with no pause in between.
  Leadership stepping_down = Leading(env_.clock, 5);
  stepping_down.stepping_down = true;
  env_.publisher.Publish(stepping_down);
  server_->Shutdown(absl::Now() + absl::Seconds(5));
  for (auto& w : watchers) {
    std::optional<v1::WatchLeadershipResponse> last = w->Next();
    ASSERT_TRUE(last);
    EXPECT_TRUE(last->leadership().stepping_down());
    EXPECT_FALSE(last->leadership().is_leader());
    std::optional<grpc::Status> status = w->Status();
    ASSERT_TRUE(status);
    EXPECT_TRUE(status->ok()) << status->error_message();
    EXPECT_FALSE(w->Next(absl::ZeroDuration()));
  }
}

TEST_F(GrpcServerTest, HealthServiceReportsLeaderLivenessAndReadiness) {
  absl::Status live = absl::OkStatus();
  env_.context.hooks.liveness = [&] { return live; };
  EXPECT_TRUE(HealthBecomes("", kServing));
  EXPECT_TRUE(HealthBecomes("leader", kNotServing));
  EXPECT_TRUE(HealthBecomes("ready", kNotServing));  // Lease not observed yet

  env_.publisher.Publish(Leading(env_.clock, 1, absl::Seconds(10)));
  EXPECT_TRUE(HealthBecomes("leader", kServing));
  EXPECT_TRUE(HealthBecomes("ready", kServing));

  // The guarantee runs out with no publish at all.
  env_.clock.Advance(absl::Seconds(10));
  EXPECT_TRUE(HealthBecomes("leader", kNotServing));

  live = absl::DeadlineExceededError("renew overdue");
  EXPECT_TRUE(HealthBecomes("", kNotServing));
}

TEST_F(GrpcServerTest, ResignCallsTheHook) {
  env_.publisher.Publish(Leading(env_.clock, 2));
  env_.context.hooks.resign = [&] {
    Leadership l = env_.publisher.Current().leadership;
    l.stepping_down = true;
    env_.publisher.Publish(l);
    return absl::OkStatus();
  };
  grpc::ClientContext context;
  v1::ResignResponse response;
  ASSERT_TRUE(stub_->Resign(&context, v1::ResignRequest(), &response).ok());
  EXPECT_TRUE(response.was_leader());
  EXPECT_FALSE(response.leadership().is_leader());
  EXPECT_TRUE(response.leadership().stepping_down());
}

TEST_F(GrpcServerTest, ResignWithoutAHookIsUnimplementedAndErrorsMap) {
  grpc::ClientContext context;
  v1::ResignResponse response;
  EXPECT_EQ(stub_->Resign(&context, v1::ResignRequest(), &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  env_.context.hooks.resign = [] { return absl::FailedPreconditionError("not now"); };
  grpc::ClientContext context2;
  grpc::Status status = stub_->Resign(&context2, v1::ResignRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "not now");
}

TEST_F(GrpcServerTest, AbruptDisconnectsMidStreamDoNotDisturbOthers) {
  WatchClient survivor(stub_.get());
  ASSERT_TRUE(survivor.Next());
  for (int round = 0; round < 5; ++round) {
    // Separate connections, dropped without a goodbye.
    std::vector<std::unique_ptr<WatchClient>> doomed;
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    std::vector<std::unique_ptr<v1::LeaderElection::Stub>> stubs;
    for (int i = 0; i < 10; ++i) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      channels.push_back(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                                   grpc::InsecureChannelCredentials(), args));
      stubs.push_back(v1::LeaderElection::NewStub(channels.back()));
      doomed.push_back(std::make_unique<WatchClient>(stubs.back().get()));
      ASSERT_TRUE(doomed.back()->Next());
    }
    env_.publisher.Publish(Following(env_.clock, kOther, round + 1));
    doomed.clear();
  }
  for (int round = 0; round < 5; ++round) {
    std::optional<v1::WatchLeadershipResponse> m = survivor.Next();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->leadership().fencing_token(), round + 1);
  }
  EXPECT_EQ(GetLeadership().fencing_token(), 5);
}

TEST_F(GrpcServerTest, ManyWatchersAllSeeAHandover) {
  constexpr int kWatchers = 200;
  env_.publisher.Publish(Leading(env_.clock, 1));
  std::vector<std::unique_ptr<WatchClient>> watchers;
  for (int i = 0; i < kWatchers; ++i)
    watchers.push_back(std::make_unique<WatchClient>(stub_.get()));
  for (auto& w : watchers) ASSERT_TRUE(w->Next());
  EXPECT_NE(env_.metrics.Render().find("baton_grpc_watchers 200\n"), std::string::npos);
  env_.publisher.Publish(Following(env_.clock, kOther, 2));
  for (auto& w : watchers) {
    std::optional<v1::WatchLeadershipResponse> m = w->Next();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->leadership().holder_identity(), kOther);
  }
}

TEST(GrpcServerStartTest, PortInUseIsUnavailable) {
  ApiTestEnv env;
  GrpcServerOptions options;
  options.address = "127.0.0.1:0";
  GrpcServer first(options, &env.context);
  ASSERT_TRUE(first.Start().ok());
  options.address = "127.0.0.1:" + std::to_string(first.port());
  GrpcServer second(options, &env.context);
  EXPECT_EQ(second.Start().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace baton

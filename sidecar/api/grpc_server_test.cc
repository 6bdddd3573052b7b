#include "sidecar/api/grpc_server.h"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "sidecar/api/testing/api_test_env.h"

namespace baton {
namespace {

using ::testing::HasSubstr;
using Event = v1::WatchLeadershipResponse::Event;
using google::protobuf::util::TimeUtil;
using testing::ApiTestEnv;
using testing::Following;
using testing::kOther;
using testing::Leading;

// One server stream read on its own thread into a queue, so tests can wait
// for the next message with a timeout.
template <typename Response>
class StreamClient {
 public:
  using Start = std::function<std::unique_ptr<grpc::ClientReader<Response>>(grpc::ClientContext*)>;

  // `start` opens the stream on the context it is given, on the reading
  // thread: a stream the connection has no room for yet blocks there.
  explicit StreamClient(Start start) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    thread_ = std::thread([this, start = std::move(start)] {
      std::unique_ptr<grpc::ClientReader<Response>> reader = start(&context_);
      Response message;
      while (reader->Read(&message)) {
        absl::MutexLock lock(&mu_);
        messages_.push_back(message);
      }
      grpc::Status status = reader->Finish();
      absl::MutexLock lock(&mu_);
      status_ = status;
    });
  }
  ~StreamClient() {
    context_.TryCancel();
    thread_.join();
  }

  // The next message, or nullopt if none arrives within `timeout`.
  std::optional<Response> Next(absl::Duration timeout = absl::Seconds(5)) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !messages_.empty() || status_.has_value();
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    if (messages_.empty()) return std::nullopt;
    Response m = messages_.front();
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
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<Response> messages_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> status_ ABSL_GUARDED_BY(mu_);
};

v1::WatchLeadershipRequest WatchRequest(absl::Duration heartbeat, const std::string& client_id) {
  v1::WatchLeadershipRequest request;
  request.set_client_id(client_id);
  if (heartbeat > absl::ZeroDuration()) {
    *request.mutable_heartbeat_interval() =
        TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(heartbeat));
  }
  return request;
}

// A WatchLeadership stream.
class WatchClient : public StreamClient<v1::WatchLeadershipResponse> {
 public:
  explicit WatchClient(v1::LeaderElection::Stub* stub,
                       absl::Duration heartbeat = absl::ZeroDuration(),
                       const std::string& client_id = "")
      : StreamClient(
            [stub, request = WatchRequest(heartbeat, client_id)](grpc::ClientContext* context) {
              return stub->WatchLeadership(context, request);
            }) {}
};

using HealthResponse = grpc::health::v1::HealthCheckResponse;
using HealthStub = grpc::health::v1::Health::Stub;

// A grpc.health.v1.Health/Watch stream of `service`.
class HealthWatchClient : public StreamClient<HealthResponse> {
 public:
  HealthWatchClient(HealthStub* stub, const std::string& service)
      : StreamClient([stub, service](grpc::ClientContext* context) {
          grpc::health::v1::HealthCheckRequest request;
          request.set_service(service);
          return stub->Watch(context, request);
        }) {}

  // The status in the next message; UNKNOWN if none arrives within 5s.
  HealthResponse::ServingStatus NextStatus() {
    std::optional<HealthResponse> m = Next();
    return m ? m->status() : HealthResponse::UNKNOWN;
  }
};

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
    health_stub_ = grpc::health::v1::Health::NewStub(channel_);
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

  // AcknowledgeStepDown, naming the deadline `up_to` if given.
  grpc::Status Acknowledge(const std::string& client_id, int32_t token,
                           bool* acknowledged = nullptr,
                           const google::protobuf::Duration* up_to = nullptr) {
    grpc::ClientContext context;
    v1::AcknowledgeStepDownRequest request;
    request.set_client_id(client_id);
    request.set_fencing_token(token);
    if (up_to != nullptr) *request.mutable_valid_until_boottime() = *up_to;
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

  // grpc.health.v1.Health/Check of `service`: its status, and the call's
  // status in *call.
  HealthResponse::ServingStatus Check(const std::string& service, grpc::Status* call = nullptr) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    HealthResponse response;
    grpc::Status status = health_stub_->Check(&context, request, &response);
    if (call != nullptr) *call = status;
    EXPECT_TRUE(call != nullptr || status.ok()) << status.error_message();
    return response.status();
  }

  // What the hooks of StartServerWithHooks answer. Here, not in the test
  // body: the server's refresher calls the hooks until the server is
  // destroyed, after the body has returned.
  struct HookAnswers {
    absl::Mutex mu;
    absl::Status live ABSL_GUARDED_BY(mu);
    absl::Status ready ABSL_GUARDED_BY(mu);
  };
  void SetHookAnswers(absl::Status live, absl::Status ready) {
    absl::MutexLock lock(&hooks_.mu);
    hooks_.live = std::move(live);
    hooks_.ready = std::move(ready);
  }
  // Starts the server again with a liveness hook and, if `readiness`, a
  // readiness hook answering hooks_ (installed while no server runs: the
  // refresher calls them from its own thread).
  void StartServerWithHooks(bool readiness) {
    server_.reset();
    env_.context.hooks.liveness = [this] {
      absl::MutexLock lock(&hooks_.mu);
      return hooks_.live;
    };
    if (readiness) {
      env_.context.hooks.readiness = [this] {
        absl::MutexLock lock(&hooks_.mu);
        return hooks_.ready;
      };
    }
    StartServer();
  }

  HookAnswers hooks_;
  ApiTestEnv env_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::LeaderElection::Stub> stub_;
  std::unique_ptr<HealthStub> health_stub_;
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
  env_.context.hooks.acknowledge = [&](const Acknowledgement& ack) {
    seen = absl::StrCat(absl::string_view(ack.client_id.data(), ack.client_id.size()), "@",
                        ack.fencing_token, ack.up_to ? "+deadline" : "");
    return true;
  };
  bool acknowledged = false;
  ASSERT_TRUE(Acknowledge("app-1", 3, &acknowledged).ok());
  EXPECT_TRUE(acknowledged);
  EXPECT_EQ(seen, "app-1@3");
  const google::protobuf::Duration deadline = TimeUtil::SecondsToDuration(3610);
  ASSERT_TRUE(Acknowledge("app-1", 3, &acknowledged, &deadline).ok());
  EXPECT_EQ(seen, "app-1@3+deadline");
}

TEST_F(GrpcServerTest, AcknowledgementNamingADeadlineLeavesALaterPromiseOutstanding) {
  Lead(8);
  const v1::Leadership first = GetLeadership("app-1");
  ASSERT_TRUE(first.is_leader());
  // A renew, and a later answer to the same client.
  env_.clock.Advance(absl::Seconds(2));
  const MonoTime later = Lead(8);
  ASSERT_TRUE(GetLeadership("app-1").is_leader());
  // An acknowledgement of the first answer arrives late: the later promise
  // stays outstanding.
  bool acknowledged = true;
  ASSERT_TRUE(Acknowledge("app-1", 8, &acknowledged, &first.valid_until_boottime()).ok());
  EXPECT_FALSE(acknowledged);
  EXPECT_EQ(Outstanding(8), later);
  // Naming the deadline of the later answer settles the client.
  const v1::Leadership last = GetLeadership("app-1");
  ASSERT_TRUE(Acknowledge("app-1", 8, &acknowledged, &last.valid_until_boottime()).ok());
  EXPECT_TRUE(acknowledged);
  EXPECT_FALSE(Outstanding(8));
}

TEST_F(GrpcServerTest, AcknowledgementWithANegativeDeadlineIsInvalidArgument) {
  const MonoTime until = Lead(8);
  ASSERT_TRUE(GetLeadership("app-1").is_leader());
  for (const google::protobuf::Duration& deadline :
       {TimeUtil::SecondsToDuration(-1), TimeUtil::NanosecondsToDuration(-1)}) {
    EXPECT_EQ(Acknowledge("app-1", 8, nullptr, &deadline).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << deadline.DebugString();
  }
  EXPECT_EQ(Outstanding(8), until);
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

TEST_F(GrpcServerTest, AStreamThatIsSentNothingIsPromisedNothing) {
  Lead(5);
  WatchClient watch(stub_.get(), absl::ZeroDuration(), "app-1");
  ASSERT_TRUE(watch.Next()->leadership().is_leader());
  ASSERT_TRUE(Acknowledge("app-1", 5).ok());
  // Refreshes keep running (every 20ms here), but with no change and no
  // heartbeat the stream is owed nothing, so nothing new is promised.
  env_.clock.Advance(absl::Seconds(1));
  env_.publisher.Publish(Leading(env_.clock, 5, absl::Seconds(10)));  // a renew
  EXPECT_FALSE(watch.Next(absl::Milliseconds(200)));
  EXPECT_FALSE(Outstanding(5));
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
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(5));
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

TEST_F(GrpcServerTest, HealthCheckReportsLeaderLivenessAndReadiness) {
  SetHookAnswers(absl::OkStatus(), absl::OkStatus());
  StartServerWithHooks(/*readiness=*/false);  // ready: the Lease observed
  EXPECT_EQ(Check(""), HealthResponse::SERVING);
  EXPECT_EQ(Check("leader"), HealthResponse::NOT_SERVING);
  EXPECT_EQ(Check("ready"), HealthResponse::NOT_SERVING);  // Lease not observed yet

  env_.publisher.Publish(Leading(env_.clock, 1, absl::Seconds(10)));
  EXPECT_EQ(Check("leader"), HealthResponse::SERVING);
  EXPECT_EQ(Check("ready"), HealthResponse::SERVING);

  SetHookAnswers(absl::DeadlineExceededError("renew overdue"), absl::OkStatus());
  EXPECT_EQ(Check(""), HealthResponse::NOT_SERVING);
}

TEST_F(GrpcServerTest, HealthCheckOfLeaderIsComputedWhenAsked) {
  env_.publisher.Publish(Leading(env_.clock, 1, absl::Seconds(10)));
  ASSERT_EQ(Check("leader"), HealthResponse::SERVING);
  // A pause past the guarantee, with no publish and no time for any refresh:
  // the very next Check knows.
  env_.clock.Advance(absl::Seconds(10));
  EXPECT_EQ(Check("leader"), HealthResponse::NOT_SERVING);
  env_.publisher.Publish(Leading(env_.clock, 1, absl::Seconds(10)));
  env_.publisher.StepDown();
  EXPECT_EQ(Check("leader"), HealthResponse::NOT_SERVING);
}

TEST_F(GrpcServerTest, HealthCheckOfAnUnknownServiceIsNotFound) {
  grpc::Status call;
  Check("leader-of-something-else", &call);
  EXPECT_EQ(call.error_code(), grpc::StatusCode::NOT_FOUND);
}

// A Watch message has no deadline: a leader paused past its promises would
// stay SERVING to its watchers while another pod leads.
TEST_F(GrpcServerTest, HealthWatchOfLeaderIsRefusedBecauseItsAnswerWouldHaveNoDeadline) {
  env_.publisher.Publish(Leading(env_.clock, 1, absl::Seconds(10)));
  HealthWatchClient watch(health_stub_.get(), "leader");
  std::optional<grpc::Status> status = watch.Status();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status->error_message(), HasSubstr("WatchLeadership"));
  // Check still answers, when asked.
  EXPECT_EQ(Check("leader"), HealthResponse::SERVING);
}

TEST_F(GrpcServerTest, HealthWatchOfTheHooksFollowsThemWithinTheRefreshInterval) {
  SetHookAnswers(absl::OkStatus(), absl::UnavailableError("API server unreachable"));
  StartServerWithHooks(/*readiness=*/true);
  HealthWatchClient watch(health_stub_.get(), "ready");
  EXPECT_EQ(watch.NextStatus(), HealthResponse::NOT_SERVING);
  SetHookAnswers(absl::OkStatus(), absl::OkStatus());
  EXPECT_EQ(watch.NextStatus(), HealthResponse::SERVING);
}

TEST_F(GrpcServerTest, HealthWatchOfAnUnknownServiceSaysSoAndStaysOpen) {
  HealthWatchClient watch(health_stub_.get(), "nope");
  EXPECT_EQ(watch.NextStatus(), HealthResponse::SERVICE_UNKNOWN);
  EXPECT_FALSE(watch.Status(absl::Milliseconds(100)));
}

TEST_F(GrpcServerTest, ShutdownTellsHealthWatchersNotServingThenEndsThemWithOk) {
  env_.publisher.Publish(Leading(env_.clock, 1));
  HealthWatchClient live(health_stub_.get(), "");
  HealthWatchClient ready(health_stub_.get(), "ready");
  ASSERT_EQ(live.NextStatus(), HealthResponse::SERVING);
  ASSERT_EQ(ready.NextStatus(), HealthResponse::SERVING);
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(5));
  for (HealthWatchClient* w : {&live, &ready}) {
    EXPECT_EQ(w->NextStatus(), HealthResponse::NOT_SERVING);
    std::optional<grpc::Status> status = w->Status();
    ASSERT_TRUE(status);
    EXPECT_TRUE(status->ok()) << status->error_message();
  }
}

TEST_F(GrpcServerTest, HealthWatchersBeyondTheLimitGetResourceExhausted) {
  server_.reset();
  GrpcServerOptions options = TestOptions();
  options.max_health_watchers = 1;
  StartServer(options);
  HealthWatchClient first(health_stub_.get(), "");
  ASSERT_EQ(first.NextStatus(), HealthResponse::SERVING);
  HealthWatchClient refused(health_stub_.get(), "");
  std::optional<grpc::Status> status = refused.Status();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // WatchLeadership streams are counted apart.
  WatchClient watch(stub_.get());
  EXPECT_TRUE(watch.Next());
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

TEST_F(GrpcServerTest, GetLeadershipPromisesAtMostWhatTheReaderAsks) {
  env_.context.max_unnamed_valid_for = absl::Seconds(1);
  env_.publisher.Publish(Leading(env_.clock, 7, absl::Seconds(10)));
  auto ask = [&](const std::string& client_id, std::optional<absl::Duration> bound) {
    grpc::ClientContext context;
    v1::GetLeadershipRequest request;
    request.set_client_id(client_id);
    if (bound) {
      *request.mutable_max_valid_for() =
          TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(*bound));
    }
    v1::Leadership response;
    const grpc::Status status = stub_->GetLeadership(&context, request, &response);
    return std::make_pair(status,
                          absl::Nanoseconds(TimeUtil::DurationToNanoseconds(response.valid_for())));
  };
  EXPECT_LE(ask("", std::nullopt).second, absl::Seconds(1)) << "unnamed: the sidecar's bound";
  EXPECT_GT(ask("app", std::nullopt).second, absl::Seconds(9)) << "named: the whole promise";
  EXPECT_LE(ask("app", absl::Milliseconds(300)).second, absl::Milliseconds(300));
  EXPECT_GT(ask("", absl::Seconds(5)).second, absl::Seconds(4));
  for (absl::Duration bad : {absl::ZeroDuration(), absl::Microseconds(500), -absl::Seconds(1)}) {
    EXPECT_EQ(ask("app", bad).first.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
  }
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
  watchers.reserve(kWatchers);
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

TEST_F(GrpcServerTest, StreamsBeyondTheConnectionsLimitWaitForAFreeSlot) {
  server_.reset();
  GrpcServerOptions options = TestOptions();
  options.max_concurrent_streams_per_connection = 2;
  StartServer(options);
  auto first = std::make_unique<WatchClient>(stub_.get());
  WatchClient second(stub_.get());
  ASSERT_TRUE(first->Next());
  ASSERT_TRUE(second.Next());
  // Same connection: the client holds the third stream back.
  WatchClient third(stub_.get());
  EXPECT_FALSE(third.Next(absl::Milliseconds(300)));
  first.reset();
  EXPECT_TRUE(third.Next());
}

TEST_F(GrpcServerTest, IdleConnectionsAreClosed) {
  server_.reset();
  GrpcServerOptions options = TestOptions();
  options.max_connection_idle = absl::Milliseconds(100);
  StartServer(options);
  GetLeadership();
  ASSERT_EQ(channel_->GetState(false), GRPC_CHANNEL_READY);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (channel_->GetState(false) == GRPC_CHANNEL_READY && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_NE(channel_->GetState(false), GRPC_CHANNEL_READY);
  // The next call simply connects again.
  EXPECT_FALSE(GetLeadership().is_leader());
}

TEST_F(GrpcServerTest, ConnectionAgeNeverCutsAWatchStream) {
  server_.reset();
  GrpcServerOptions options = TestOptions();
  options.max_connection_age = absl::Milliseconds(100);
  StartServer(options);
  WatchClient watch(stub_.get());
  ASSERT_TRUE(watch.Next());
  absl::SleepFor(absl::Milliseconds(500));
  env_.publisher.Publish(Following(env_.clock, kOther, 2));
  std::optional<v1::WatchLeadershipResponse> m = watch.Next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->leadership().holder_identity(), kOther);
  // New calls go over a fresh connection.
  EXPECT_EQ(GetLeadership().holder_identity(), kOther);
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

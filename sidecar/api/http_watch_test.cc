// GET /leader/watch: the Server-Sent Events stream of HttpServer, on port 0
// with a fake clock.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/api/http_server.h"
#include "sidecar/api/testing/api_test_env.h"
#include "sidecar/api/testing/raw_http_client.h"
#include "sidecar/api/testing/sse_client.h"

namespace baton {
namespace {

using testing::ApiTestEnv;
using testing::Following;
using testing::Get;
using ::testing::HasSubstr;
using testing::HttpResponse;
using testing::kOther;
using testing::Leading;
using testing::RawHttpConnection;
using testing::SseClient;
using testing::SseEvent;

namespace http = boost::beast::http;

class HttpWatchTest : public ::testing::Test {
 protected:
  static HttpServerOptions TestOptions() {
    HttpServerOptions options;
    options.address = "127.0.0.1:0";
    options.leader_cache_window = absl::ZeroDuration();  // GET /leader as fresh as an event
    options.write_timeout = absl::Seconds(2);
    options.close_linger = absl::Milliseconds(200);
    options.watch_refresh_interval = absl::Milliseconds(20);
    options.min_watch_heartbeat = absl::Milliseconds(20);
    return options;
  }

  void StartServer(HttpServerOptions options = TestOptions()) {
    server_ = std::make_unique<HttpServer>(std::move(options), &env_.context);
    ASSERT_TRUE(server_->Start().ok());
  }

  void SetUp() override { StartServer(); }

  // The Leadership JSON of the next event (not a comment) on `client`.
  boost::json::object NextLeadership(SseClient& client, absl::Duration timeout = absl::Seconds(5)) {
    std::optional<SseEvent> e = client.NextEvent(timeout);
    EXPECT_TRUE(e.has_value()) << "no event within " << timeout;
    if (!e) return {};
    EXPECT_EQ(e->event, "leadership");
    return boost::json::parse(e->data).as_object();
  }

  std::optional<HttpResponse> Fetch(const std::string& target) {
    RawHttpConnection conn(server_->port());
    return conn.RoundTrip(Get(target));
  }

  // Waits until the server has `n` streams open.
  void AwaitWatchers(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (server_->watchers() != n && absl::Now() < deadline)
      absl::SleepFor(absl::Milliseconds(5));
    ASSERT_EQ(server_->watchers(), n);
  }

  std::optional<MonoTime> Outstanding(int64_t token) {
    return env_.publisher.OutstandingUntil(token, env_.clock.Monotonic());
  }

  ApiTestEnv env_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpWatchTest, TheStreamIsAnEventStreamWhoseFirstEventIsTheBodyOfGetLeader) {
  env_.publisher.Publish(Leading(env_.clock, 7));
  SseClient watch(server_->port());
  std::optional<std::string> head = watch.Head();
  ASSERT_TRUE(head);
  EXPECT_THAT(*head, ::testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(*head, HasSubstr("Content-Type: text/event-stream\r\n"));
  EXPECT_THAT(*head, HasSubstr("Cache-Control: no-store\r\n"));
  EXPECT_THAT(*head, HasSubstr("Transfer-Encoding: chunked"));
  EXPECT_THAT(*head, ::testing::Not(HasSubstr("Content-Length")));

  std::optional<SseEvent> first = watch.Next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->event, "leadership");
  // The fake clock stands still: both are worked out at the same instant.
  std::optional<HttpResponse> leader = Fetch("/leader");
  ASSERT_TRUE(leader);
  EXPECT_EQ(first->data + "\n", leader->body());
  EXPECT_EQ(first->data.find('\n'), std::string::npos);
}

TEST_F(HttpWatchTest, Http10GetsTheEventsUntilTheConnectionCloses) {
  SseClient watch(server_->port(), SseClient::Options{.http10 = true});
  std::optional<std::string> head = watch.Head();
  ASSERT_TRUE(head);
  EXPECT_THAT(*head, ::testing::Not(HasSubstr("chunked")));
  EXPECT_FALSE(NextLeadership(watch)["observed"].as_bool());
  env_.publisher.Publish(Leading(env_.clock, 3));
  EXPECT_TRUE(NextLeadership(watch)["isLeader"].as_bool());
}

TEST_F(HttpWatchTest, EveryChangeOfHolderTokenOrIsLeaderIsAnEvent) {
  env_.publisher.Publish(Leading(env_.clock, 5));
  SseClient watch(server_->port());
  EXPECT_TRUE(NextLeadership(watch)["isLeader"].as_bool());

  env_.publisher.Publish(Following(env_.clock, kOther, 6));
  boost::json::object changed = NextLeadership(watch);
  EXPECT_FALSE(changed["isLeader"].as_bool());
  EXPECT_EQ(changed["holderIdentity"].as_string(), kOther);
  EXPECT_EQ(changed["fencingToken"].as_int64(), 6);

  Leadership other_uid = Following(env_.clock, kOther, 6);
  other_uid.lease_uid = "uid-2";
  env_.publisher.Publish(other_uid);
  EXPECT_EQ(NextLeadership(watch)["leaseUid"].as_string(), "uid-2");
}

TEST_F(HttpWatchTest, RenewsAloneSendNothing) {
  Leadership l = Leading(env_.clock, 5);
  env_.publisher.Publish(l);
  SseClient watch(server_->port());
  NextLeadership(watch);
  l.leader_until += absl::Seconds(2);
  l.renew_time = *l.renew_time + absl::Seconds(2);
  env_.publisher.Publish(l);
  EXPECT_FALSE(watch.Next(absl::Milliseconds(200)));
}

TEST_F(HttpWatchTest, TheGuaranteeRunningOutWithTimeAloneIsAnEvent) {
  env_.publisher.Publish(Leading(env_.clock, 5, absl::Seconds(10)));
  SseClient watch(server_->port());
  EXPECT_TRUE(NextLeadership(watch)["isLeader"].as_bool());
  env_.clock.Advance(absl::Seconds(10));
  boost::json::object lapsed = NextLeadership(watch, absl::Seconds(1));
  EXPECT_FALSE(lapsed["isLeader"].as_bool());
  EXPECT_EQ(lapsed["validFor"].as_string(), "0s");
}

TEST_F(HttpWatchTest, WithoutAHeartbeatParameterCommentsFillTheSilence) {
  server_.reset();
  HttpServerOptions options = TestOptions();
  options.watch_heartbeat = absl::Milliseconds(50);
  StartServer(options);
  env_.publisher.Publish(Leading(env_.clock, 5));
  SseClient watch(server_->port(), "/leader/watch?client_id=app-1");
  NextLeadership(watch);
  ASSERT_TRUE(env_.publisher.Acknowledge({"app-1", 5, std::nullopt}, env_.clock.Monotonic()));
  for (int i = 0; i < 3; ++i) {
    const absl::Time start = absl::Now();
    std::optional<SseEvent> beat = watch.Next(absl::Seconds(1));
    ASSERT_TRUE(beat);
    EXPECT_EQ(beat->event, "");
    EXPECT_EQ(beat->comment, "heartbeat");
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));
  }
  // A comment is not an answer: nothing was promised since the acknowledgement.
  EXPECT_EQ(Outstanding(5), std::nullopt);
}

TEST_F(HttpWatchTest, AnAskedHeartbeatIsTheStateAgainWithAFreshPromise) {
  Leadership l = Leading(env_.clock, 5);
  env_.publisher.Publish(l);
  const absl::Time opened = absl::Now();
  SseClient watch(server_->port(), "/leader/watch?client_id=app-1&heartbeat=50ms");
  EXPECT_TRUE(NextLeadership(watch)["isLeader"].as_bool());
  EXPECT_EQ(Outstanding(5), l.leader_until);
  // A renew alone sends nothing, but the next heartbeat tells it, and
  // promises it.
  l.leader_until += absl::Seconds(5);
  env_.publisher.Publish(l);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(NextLeadership(watch, absl::Seconds(1))["isLeader"].as_bool());
  }
  // Paced, not a flood: each heartbeat comes the interval less half the
  // minimum (50ms - 10ms) after the message before it at the earliest, so
  // the third 120ms after the stream opened, however late this thread reads
  // them.
  EXPECT_GE(absl::Now() - opened, absl::Milliseconds(120));
  EXPECT_EQ(Outstanding(5), l.leader_until);
}

TEST_F(HttpWatchTest, TheServersHeartbeatIsTheLongestAndTheMinimumTheShortest) {
  server_.reset();
  HttpServerOptions options = TestOptions();
  options.watch_heartbeat = absl::Milliseconds(60);
  StartServer(options);
  // Asking for more than the server's interval gets the server's.
  SseClient slow(server_->port(), "/leader/watch?heartbeat=1h");
  NextLeadership(slow);
  ASSERT_TRUE(slow.Next(absl::Milliseconds(500)));
  // Asking for less than the minimum (20ms here) gets the minimum: the
  // heartbeat comes the minimum less half of it after the first event at the
  // earliest.
  const absl::Time opened = absl::Now();
  SseClient fast(server_->port(), "/leader/watch?heartbeat=1ms");
  NextLeadership(fast);
  ASSERT_TRUE(fast.Next(absl::Milliseconds(500)));
  EXPECT_GE(absl::Now() - opened, absl::Milliseconds(10));
}

TEST_F(HttpWatchTest, MalformedParametersAre400AndOpenNoStream) {
  for (const std::string target :
       {"/leader/watch?heartbeat=soon", "/leader/watch?heartbeat=-1s", "/leader/watch?heartbeat=0s",
        "/leader/watch?client_id=a/b", "/leader/watch?client_id=a&client_id=b"}) {
    std::optional<HttpResponse> res = Fetch(target);
    ASSERT_TRUE(res) << target;
    EXPECT_EQ(res->result(), http::status::bad_request) << target;
  }
  EXPECT_EQ(server_->watchers(), 0);
}

TEST_F(HttpWatchTest, HeadAnswersTheStreamsHeadAndNoStream) {
  RawHttpConnection conn(server_->port());
  std::optional<HttpResponse> res = conn.RoundTrip(Get("/leader/watch", "HEAD"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ((*res)[http::field::content_type], "text/event-stream");
  EXPECT_FALSE(res->has_content_length());
  EXPECT_FALSE(res->chunked());
  EXPECT_TRUE(conn.WaitClosed(absl::Seconds(1)));
  EXPECT_EQ(server_->watchers(), 0);
}

TEST_F(HttpWatchTest, EveryLeaderEventIsAPromiseToTheStreamsClient) {
  const Leadership l = Leading(env_.clock, 5);
  env_.publisher.Publish(l);
  SseClient watch(server_->port(), "/leader/watch?client_id=app-1");
  EXPECT_TRUE(NextLeadership(watch)["isLeader"].as_bool());
  EXPECT_EQ(Outstanding(5), l.leader_until);
  // The promise is app-1's: its acknowledgement voids it.
  EXPECT_TRUE(env_.publisher.Acknowledge({"app-1", 5, std::nullopt}, env_.clock.Monotonic()));
  EXPECT_EQ(Outstanding(5), std::nullopt);

  // A renew sends nothing, so it promises nothing.
  Leadership renewed = l;
  renewed.leader_until += absl::Seconds(5);
  env_.publisher.Publish(renewed);
  EXPECT_FALSE(watch.Next(absl::Milliseconds(100)));
  EXPECT_EQ(Outstanding(5), std::nullopt);
}

TEST_F(HttpWatchTest, AnEventAfterStepDownBeganSaysNotLeaderAndPromisesNothing) {
  env_.publisher.Publish(Leading(env_.clock, 5));
  SseClient watch(server_->port(), "/leader/watch?client_id=app-1");
  EXPECT_TRUE(NextLeadership(watch)["isLeader"].as_bool());
  EXPECT_TRUE(env_.publisher.Acknowledge({"app-1", 5, std::nullopt}, env_.clock.Monotonic()));
  env_.publisher.StepDown();
  boost::json::object stepping = NextLeadership(watch);
  EXPECT_TRUE(stepping["steppingDown"].as_bool());
  EXPECT_FALSE(stepping["isLeader"].as_bool());
  EXPECT_EQ(Outstanding(5), std::nullopt);
}

TEST_F(HttpWatchTest, ASlowReaderGetsTheNewestStateNotABacklog) {
  env_.publisher.Publish(Following(env_.clock, kOther, 1));
  SseClient slow(server_->port(), SseClient::Options{.receive_buffer = 4096});
  NextLeadership(slow);
  // Far more than the socket buffers hold, while the client reads nothing.
  constexpr int kChanges = 3000;
  for (int token = 2; token <= kChanges; ++token) {
    env_.publisher.Publish(Following(env_.clock, kOther, token));
  }
  int events = 0;
  int64_t last = 0;
  for (;;) {
    std::optional<SseEvent> e = slow.NextEvent(absl::Milliseconds(300));
    if (!e) break;
    ++events;
    last = boost::json::parse(e->data).as_object()["fencingToken"].as_int64();
  }
  EXPECT_EQ(last, kChanges);
  EXPECT_LT(events, kChanges / 2);
}

TEST_F(HttpWatchTest, StreamsBeyondTheLimitGet503WithTheReason) {
  server_.reset();
  HttpServerOptions options = TestOptions();
  options.max_watchers = 2;
  StartServer(options);
  SseClient a(server_->port());
  SseClient b(server_->port());
  NextLeadership(a);
  NextLeadership(b);
  RawHttpConnection third(server_->port());
  std::optional<HttpResponse> refused = third.RoundTrip(Get("/leader/watch"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->result(), http::status::service_unavailable);
  EXPECT_THAT(refused->body(), HasSubstr("too many watch streams"));
  // The refusal is an ordinary answer; requests are still served.
  std::optional<HttpResponse> leader = Fetch("/leader");
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->result(), http::status::ok);
}

TEST_F(HttpWatchTest, StreamsAreNeverEvictedAndLeaveRoomForRequests) {
  server_.reset();
  HttpServerOptions options = TestOptions();
  options.max_connections = 4;
  StartServer(options);
  std::vector<std::unique_ptr<SseClient>> streams;
  for (int i = 0; i < 6; ++i) {
    streams.push_back(std::make_unique<SseClient>(server_->port()));
    NextLeadership(*streams.back());
  }
  AwaitWatchers(6);
  // Idle connections beyond the limit evict each other, never a stream.
  std::vector<std::unique_ptr<RawHttpConnection>> idle;
  idle.reserve(10);
  for (int i = 0; i < 10; ++i) idle.push_back(std::make_unique<RawHttpConnection>(server_->port()));
  std::optional<HttpResponse> leader = Fetch("/leader");
  ASSERT_TRUE(leader);
  EXPECT_EQ(leader->result(), http::status::ok);
  env_.publisher.Publish(Leading(env_.clock, 9));
  for (auto& s : streams) EXPECT_TRUE(NextLeadership(*s)["isLeader"].as_bool());
  EXPECT_EQ(server_->watchers(), 6);
}

TEST_F(HttpWatchTest, AClientThatLeavesFreesItsStream) {
  {
    SseClient gone(server_->port());
    NextLeadership(gone);
    AwaitWatchers(1);
  }
  AwaitWatchers(0);
}

TEST_F(HttpWatchTest, StepDownReachesEveryStreamBeforeTheReleaseItsPromisesHoldBack) {
  const Leadership leading = Leading(env_.clock, 5);
  env_.publisher.Publish(leading);
  std::vector<std::unique_ptr<SseClient>> watchers;
  for (int i = 0; i < 5; ++i) {
    watchers.push_back(std::make_unique<SseClient>(
        server_->port(), "/leader/watch?client_id=app-" + std::to_string(i)));
    EXPECT_TRUE(NextLeadership(*watchers.back())["isLeader"].as_bool());
  }
  EXPECT_EQ(Outstanding(5), leading.leader_until);

  // The daemon releases only once every promise is acknowledged or lapsed;
  // each stream hears of the step-down first, and only then acknowledges.
  env_.publisher.StepDown();
  for (int i = 0; i < 5; ++i) {
    boost::json::object e = NextLeadership(*watchers[i]);
    EXPECT_TRUE(e["steppingDown"].as_bool());
    EXPECT_FALSE(e["isLeader"].as_bool());
    EXPECT_NE(Outstanding(5), std::nullopt) << "released before app-" << i << " was told";
    EXPECT_TRUE(env_.publisher.Acknowledge({"app-" + std::to_string(i), 5, std::nullopt},
                                           env_.clock.Monotonic()));
  }
  EXPECT_EQ(Outstanding(5), std::nullopt);
  env_.publisher.Publish(Following(env_.clock, "", 5));  // the release
  for (auto& w : watchers) EXPECT_EQ(NextLeadership(*w)["holderIdentity"].as_string(), "");

  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(5));
  for (auto& w : watchers) {
    EXPECT_FALSE(w->NextEvent(absl::Seconds(1)));
    EXPECT_TRUE(w->ended());
  }
}

TEST_F(HttpWatchTest, ShutdownSendsWhatIsOwedThenEndsEveryStream) {
  env_.publisher.Publish(Leading(env_.clock, 5));
  std::vector<std::unique_ptr<SseClient>> watchers;
  for (int i = 0; i < 10; ++i) {
    watchers.push_back(std::make_unique<SseClient>(server_->port()));
    EXPECT_TRUE(NextLeadership(*watchers.back())["isLeader"].as_bool());
  }
  // Stepping down and closing the servers with no pause in between.
  env_.publisher.StepDown();
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(5));
  for (auto& w : watchers) {
    EXPECT_TRUE(NextLeadership(*w)["steppingDown"].as_bool());
    EXPECT_FALSE(w->NextEvent(absl::Seconds(1)));
    EXPECT_TRUE(w->ended());
    EXPECT_TRUE(w->WaitClosed(absl::Seconds(1)));
  }
}

TEST_F(HttpWatchTest, ShutdownRefusesNewStreams) {
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(1));
  RawHttpConnection late(server_->port());
  EXPECT_FALSE(late.RoundTrip(Get("/leader/watch"), absl::Milliseconds(500)));
}

TEST(HttpWatchProbesTest, TheProbesAndMetricsAddressHasNoStream) {
  ApiTestEnv env;
  HttpServerOptions options;
  options.address = "127.0.0.1:0";
  options.routes = HttpRoutes::kProbesAndMetrics;
  HttpServer server(options, &env.context);
  ASSERT_TRUE(server.Start().ok());
  RawHttpConnection conn(server.port());
  std::optional<HttpResponse> res = conn.RoundTrip(Get("/leader/watch"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::not_found);
}

}  // namespace
}  // namespace baton

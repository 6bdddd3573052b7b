#include "sidecar/api/http_server.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/api/testing/api_test_env.h"
#include "sidecar/api/testing/raw_http_client.h"

namespace baton {
namespace {

using testing::ApiTestEnv;
using testing::Following;
using testing::Get;
using ::testing::HasSubstr;
using testing::HttpResponse;
using testing::kOther;
using testing::kSelf;
using testing::Leading;
using testing::RawHttpConnection;
using ::testing::StartsWith;

namespace http = boost::beast::http;

class HttpServerTest : public ::testing::Test {
 protected:
  // Short timeouts so the tests that wait for them stay quick.
  static HttpServerOptions TestOptions() {
    HttpServerOptions options;
    options.address = "127.0.0.1:0";
    options.request_timeout = absl::Milliseconds(300);
    options.idle_timeout = absl::Seconds(5);
    options.write_timeout = absl::Seconds(1);
    options.close_linger = absl::Milliseconds(200);
    return options;
  }

  void StartServer(HttpServerOptions options = TestOptions()) {
    server_ = std::make_unique<HttpServer>(std::move(options), &env_.context);
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_NE(server_->port(), 0);
  }

  void SetUp() override { StartServer(); }

  std::optional<HttpResponse> Fetch(const std::string& target, const std::string& method = "GET") {
    RawHttpConnection conn(server_->port());
    if (!conn.connected()) return std::nullopt;
    return conn.RoundTrip(Get(target, method));
  }

  boost::json::object FetchJson(const std::string& target) {
    std::optional<HttpResponse> res = Fetch(target);
    EXPECT_TRUE(res.has_value());
    if (!res) return {};
    EXPECT_EQ(res->result(), http::status::ok);
    EXPECT_EQ((*res)[http::field::content_type], "application/json");
    return boost::json::parse(res->body()).as_object();
  }

  // The server still answers a fresh client.
  void ExpectServing() {
    std::optional<HttpResponse> res = Fetch("/leader");
    ASSERT_TRUE(res.has_value()) << "server stopped answering";
    EXPECT_EQ(res->result(), http::status::ok);
  }

  ApiTestEnv env_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, LeaderJsonHasCamelCaseFieldsAndNumericToken) {
  env_.publisher.Publish(Leading(env_.clock, 12));
  std::optional<HttpResponse> res = Fetch("/leader");
  ASSERT_TRUE(res);
  EXPECT_EQ((*res)[http::field::cache_control], "no-store");
  const boost::json::object json = boost::json::parse(res->body()).as_object();
  EXPECT_EQ(json.at("isLeader"), true);
  EXPECT_EQ(json.at("identity"), kSelf);
  EXPECT_EQ(json.at("holderIdentity"), kSelf);
  ASSERT_TRUE(json.at("fencingToken").is_int64());
  EXPECT_EQ(json.at("fencingToken").as_int64(), 12);
  EXPECT_EQ(json.at("leaseName"), "my-lease");
  EXPECT_EQ(json.at("leaseNamespace"), "apps");
  // Evaluated at the end of the 1ms answer-reuse window: conservative.
  EXPECT_EQ(json.at("validFor"), "9.999s");
  EXPECT_TRUE(json.contains("acquireTime"));
  EXPECT_TRUE(json.contains("renewTime"));
}

TEST_F(HttpServerTest, LeaderJsonSaysFalseBeforeAnything) {
  const boost::json::object json = FetchJson("/leader");
  EXPECT_EQ(json.at("isLeader"), false);
  EXPECT_EQ(json.at("observed"), false);
  EXPECT_EQ(json.at("fencingToken").as_int64(), 0);
}

TEST_F(HttpServerTest, ReadyzLeaderFlipsWithThePublishedSnapshot) {
  EXPECT_EQ(Fetch("/readyz/leader")->result(), http::status::service_unavailable);
  env_.publisher.Publish(Leading(env_.clock, 1));
  EXPECT_EQ(Fetch("/readyz/leader")->result(), http::status::ok);
  env_.publisher.Publish(Following(env_.clock, kOther, 2));
  std::optional<HttpResponse> res = Fetch("/readyz/leader");
  EXPECT_EQ(res->result(), http::status::service_unavailable);
  EXPECT_EQ(res->body(), std::string("not leader: holder is ") + kOther + "\n");
}

TEST_F(HttpServerTest, LeadershipEndsWhenTheGuaranteeRunsOutWithoutAPublish) {
  env_.publisher.Publish(Leading(env_.clock, 4, absl::Seconds(10)));
  EXPECT_EQ(FetchJson("/leader").at("isLeader"), true);
  env_.clock.Advance(absl::Seconds(9));
  EXPECT_EQ(FetchJson("/leader").at("validFor"), "0.999s");
  env_.clock.Advance(absl::Seconds(1));
  const boost::json::object json = FetchJson("/leader");
  EXPECT_EQ(json.at("isLeader"), false);
  EXPECT_EQ(json.at("validFor"), "0s");
  std::optional<HttpResponse> ready = Fetch("/readyz/leader");
  EXPECT_EQ(ready->result(), http::status::service_unavailable);
  EXPECT_EQ(ready->body(), "not leader: renew deadline passed\n");
}

TEST_F(HttpServerTest, LeaderAnswersNeverOutliveTheGuarantee) {
  // Less than the reuse window left: /leader already says no, rather than
  // risk a reused answer saying yes after the guarantee has run out.
  env_.publisher.Publish(Leading(env_.clock, 4, absl::Microseconds(500)));
  EXPECT_EQ(FetchJson("/leader").at("isLeader"), false);
  // A reused answer is never served outside its window.
  env_.publisher.Publish(Leading(env_.clock, 4, absl::Seconds(10)));
  EXPECT_EQ(FetchJson("/leader").at("validFor"), "9.999s");
  EXPECT_EQ(FetchJson("/leader").at("validFor"), "9.999s");
  env_.clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(FetchJson("/leader").at("validFor"), "9.998s");
}

TEST_F(HttpServerTest, LeaderAnswersAreFreshWithoutAReuseWindow) {
  server_->Shutdown(SystemClock()->Monotonic());
  HttpServerOptions options = TestOptions();
  options.leader_cache_window = absl::ZeroDuration();
  StartServer(options);
  env_.publisher.Publish(Leading(env_.clock, 4, absl::Seconds(10)));
  EXPECT_EQ(FetchJson("/leader").at("validFor"), "10s");
  env_.clock.Advance(absl::Microseconds(1));
  EXPECT_EQ(FetchJson("/leader").at("validFor"), "9.999999s");
}

TEST_F(HttpServerTest, RootAnswersLikeLeaderElector) {
  env_.publisher.Publish(Following(env_.clock, kOther, 2));
  const boost::json::object json = FetchJson("/");
  EXPECT_EQ(json.size(), 1u);
  EXPECT_EQ(json.at("name"), kOther);
}

TEST_F(HttpServerTest, HeadAnswersHeadersOnlyAndKeepsTheConnection) {
  RawHttpConnection conn(server_->port());
  std::optional<HttpResponse> head = conn.RoundTrip(Get("/leader", "HEAD"));
  ASSERT_TRUE(head);
  EXPECT_EQ(head->result(), http::status::ok);
  EXPECT_GT(std::stoi(std::string((*head)[http::field::content_length])), 0);
  EXPECT_TRUE(head->body().empty());
  std::optional<HttpResponse> get = conn.RoundTrip(Get("/leader"));
  ASSERT_TRUE(get);
  EXPECT_EQ(std::to_string(get->body().size()), (*head)[http::field::content_length]);
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  std::optional<HttpResponse> post = Fetch("/leader", "POST");
  EXPECT_EQ(post->result(), http::status::method_not_allowed);
  EXPECT_EQ((*post)[http::field::allow], "GET, HEAD");
  std::optional<HttpResponse> get = Fetch("/resign", "GET");
  EXPECT_EQ(get->result(), http::status::method_not_allowed);
  EXPECT_EQ((*get)[http::field::allow], "POST");
}

TEST_F(HttpServerTest, UnknownPathIs404AndQueryStringsAreIgnored) {
  EXPECT_EQ(Fetch("/nope")->result(), http::status::not_found);
  EXPECT_EQ(Fetch("/leader/")->result(), http::status::not_found);
  EXPECT_EQ(Fetch("/leader?pretty=1")->result(), http::status::ok);
}

TEST_F(HttpServerTest, ProbesComeFromTheHooks) {
  absl::Status live = absl::OkStatus();
  absl::Status ready = absl::UnavailableError("API server unreachable: connection refused");
  env_.context.hooks.liveness = [&] { return live; };
  env_.context.hooks.readiness = [&] { return ready; };
  std::optional<HttpResponse> healthz = Fetch("/healthz");
  EXPECT_EQ(healthz->result(), http::status::ok);
  EXPECT_EQ(healthz->body(), "ok\n");
  std::optional<HttpResponse> readyz = Fetch("/readyz");
  EXPECT_EQ(readyz->result(), http::status::service_unavailable);
  EXPECT_EQ(readyz->body(), "API server unreachable: connection refused\n");
  live = absl::DeadlineExceededError("renew overdue by 3s");
  EXPECT_EQ(Fetch("/healthz")->result(), http::status::service_unavailable);
}

TEST_F(HttpServerTest, ReadinessWithoutAHookWaitsForTheLeaseToBeObserved) {
  EXPECT_EQ(Fetch("/readyz")->result(), http::status::service_unavailable);
  env_.publisher.Publish(Following(env_.clock, kOther, 1));
  EXPECT_EQ(Fetch("/readyz")->result(), http::status::ok);
}

TEST_F(HttpServerTest, ResignCallsTheHookAndAnswersTheNewState) {
  env_.publisher.Publish(Leading(env_.clock, 3));
  int calls = 0;
  env_.context.hooks.resign = [&] {
    ++calls;
    Leadership l = env_.publisher.Current().leadership;
    l.stepping_down = true;
    env_.publisher.Publish(l);
    return absl::OkStatus();
  };
  std::optional<HttpResponse> res = Fetch("/resign", "POST");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ(calls, 1);
  const boost::json::object json = boost::json::parse(res->body()).as_object();
  EXPECT_EQ(json.at("wasLeader"), true);
  EXPECT_EQ(json.at("leadership").at("isLeader"), false);
  EXPECT_EQ(json.at("leadership").at("steppingDown"), true);
}

TEST_F(HttpServerTest, ResignWithoutAHookIs501) {
  EXPECT_EQ(Fetch("/resign", "POST")->result(), http::status::not_implemented);
}

TEST_F(HttpServerTest, ResignErrorsMapToHttpStatuses) {
  env_.context.hooks.resign = [] { return absl::FailedPreconditionError("already releasing"); };
  std::optional<HttpResponse> res = Fetch("/resign", "POST");
  EXPECT_EQ(res->result(), http::status::conflict);
  EXPECT_EQ(res->body(), "resign failed: already releasing\n");
}

TEST_F(HttpServerTest, MetricsAreServedInTextFormat) {
  ASSERT_EQ(Fetch("/leader")->result(), http::status::ok);
  std::optional<HttpResponse> res = Fetch("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ((*res)[http::field::content_type], Metrics::kContentType);
  EXPECT_THAT(res->body(), HasSubstr("leader_election_master_status{name=\"my-lease\"} 0\n"));
  EXPECT_THAT(res->body(),
              HasSubstr("baton_http_requests_total{route=\"/leader\",code=\"200\"} 1\n"));
}

TEST_F(HttpServerTest, ProbesAndMetricsAddressServesNothingElse) {
  HttpServerOptions options = TestOptions();
  options.routes = HttpRoutes::kProbesAndMetrics;
  HttpServer probes(options, &env_.context);
  ASSERT_TRUE(probes.Start().ok());
  env_.publisher.Publish(Leading(env_.clock, 1));
  auto fetch = [&](const std::string& target, const std::string& method = "GET") {
    RawHttpConnection conn(probes.port());
    return conn.RoundTrip(Get(target, method))->result();
  };
  EXPECT_EQ(fetch("/metrics"), http::status::ok);
  EXPECT_EQ(fetch("/healthz"), http::status::ok);
  EXPECT_EQ(fetch("/readyz"), http::status::ok);
  EXPECT_EQ(fetch("/readyz/leader"), http::status::ok);
  EXPECT_EQ(fetch("/leader"), http::status::not_found);
  EXPECT_EQ(fetch("/"), http::status::not_found);
  EXPECT_EQ(fetch("/resign", "POST"), http::status::not_found);
}

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
  RawHttpConnection conn(server_->port());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(conn.RoundTrip(Get("/leader"))->result(), http::status::ok);
  ASSERT_TRUE(conn.Send(Get("/healthz") + Get("/readyz/leader") + Get("/nope")));
  EXPECT_EQ(conn.ReadResponse()->result(), http::status::ok);
  EXPECT_EQ(conn.ReadResponse()->result(), http::status::service_unavailable);
  EXPECT_EQ(conn.ReadResponse()->result(), http::status::not_found);
}

TEST_F(HttpServerTest, Http10ClosesAfterTheAnswer) {
  RawHttpConnection conn(server_->port());
  std::optional<HttpResponse> res = conn.RoundTrip("GET /leader HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->version(), 10u);
  EXPECT_TRUE(conn.WaitClosed(absl::Seconds(2)));
}

// --- Robustness over real sockets -------------------------------------------

TEST_F(HttpServerTest, MalformedRequestLinesGet400) {
  for (const std::string& request : std::vector<std::string>{
           "GARBAGE\r\n\r\n", "GET /leader HTTP/9.9\r\n\r\n", "GET  HTTP/1.1\r\n\r\n",
           "GET /leader HTTP/1.1\r\nNo colon here\r\n\r\n", std::string("\0\1\2\3\r\n\r\n", 8)}) {
    RawHttpConnection conn(server_->port());
    std::optional<HttpResponse> res = conn.RoundTrip(request);
    ASSERT_TRUE(res) << request;
    EXPECT_EQ(res->result(), http::status::bad_request) << request;
    EXPECT_THAT(res->body(), StartsWith("bad request: "));
    EXPECT_FALSE(res->keep_alive());
    EXPECT_TRUE(conn.WaitClosed(absl::Seconds(2)));
  }
  ExpectServing();
}

TEST_F(HttpServerTest, HugeHeadersGet431) {
  RawHttpConnection conn(server_->port());
  std::string request = "GET /leader HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 1000; ++i)
    request += "X-Filler-" + std::to_string(i) + ": " + std::string(60, 'a') + "\r\n";
  request += "\r\n";
  std::optional<HttpResponse> res = conn.RoundTrip(request);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::request_header_fields_too_large);
  EXPECT_EQ(res->body(), "request header too large\n");
  ExpectServing();
}

TEST_F(HttpServerTest, HugeBodiesGet413) {
  env_.context.hooks.resign = [] { return absl::OkStatus(); };
  RawHttpConnection conn(server_->port());
  std::string request = "POST /resign HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n";
  request += std::string(size_t{64} * 1024, 'b');
  std::optional<HttpResponse> res = conn.RoundTrip(request);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::payload_too_large);
  ExpectServing();
}

TEST_F(HttpServerTest, SlowClientIsCutOffByTheRequestTimeout) {
  RawHttpConnection slow(server_->port());
  ASSERT_TRUE(slow.Send("GET /leader HTTP/1.1\r\nHost: x\r\n"));  // and never finishes
  ExpectServing();
  const absl::Time start = absl::Now();
  EXPECT_TRUE(slow.WaitClosed(absl::Seconds(3)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(HttpServerTest, TricklingClientIsCutOffToo) {
  RawHttpConnection slow(server_->port());
  const std::string request = Get("/leader");
  bool closed = false;
  const absl::Time start = absl::Now();
  for (char c : request) {
    if (!slow.Send(std::string(1, c)) || slow.WaitClosed(absl::Milliseconds(50))) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed || slow.WaitClosed(absl::Seconds(2)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionsAreClosedAfterTheIdleTimeout) {
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(1));
  HttpServerOptions options = TestOptions();
  options.idle_timeout = absl::Milliseconds(200);
  StartServer(options);
  RawHttpConnection conn(server_->port());
  ASSERT_EQ(conn.RoundTrip(Get("/leader"))->result(), http::status::ok);
  EXPECT_TRUE(conn.WaitClosed(absl::Seconds(2)));
}

TEST_F(HttpServerTest, AThousandIdleConnectionsDoNotLockOutOthers) {
  // Beyond max_connections (512 by default) the longest-idle ones are evicted.
  std::vector<std::unique_ptr<RawHttpConnection>> idle;
  for (int i = 0; i < 1000; ++i) {
    idle.push_back(std::make_unique<RawHttpConnection>(server_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  for (int i = 0; i < 20; ++i) ExpectServing();
  // The most recent idle connections are still open and served.
  std::optional<HttpResponse> recent = idle.back()->RoundTrip(Get("/leader"));
  ASSERT_TRUE(recent);
  EXPECT_EQ(recent->result(), http::status::ok);
  // The oldest were closed to make room.
  EXPECT_TRUE(idle.front()->WaitClosed(absl::Seconds(1)));
  std::optional<HttpResponse> metrics = Fetch("/metrics");
  ASSERT_TRUE(metrics);
  const size_t at = metrics->body().find("\nbaton_http_connections ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LE(std::stoi(metrics->body().substr(at + 24)), HttpServerOptions().max_connections + 1);
}

TEST_F(HttpServerTest, AtTheLimitTheConnectionWaitingLongestIsEvictedEvenMidRequest) {
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(1));
  HttpServerOptions options = TestOptions();
  options.max_connections = 2;
  options.request_timeout = absl::Seconds(5);
  StartServer(options);
  // Accepted in the order they connect, so stuck1 has waited longest.
  RawHttpConnection stuck1(server_->port());
  ASSERT_TRUE(stuck1.Send("GET /leader HTTP/1.1\r\n"));
  RawHttpConnection stuck2(server_->port());
  ASSERT_TRUE(stuck2.Send("G"));
  // Both slots hold requests that never finish; a new client evicts the
  // older one and is served, long before the request timeout.
  ExpectServing();
  EXPECT_TRUE(stuck1.WaitClosed(absl::Milliseconds(500)));
  // A keep-alive client that has just been answered starts waiting afresh,
  // so it outlasts the connection stuck since before.
  RawHttpConnection answered(server_->port());
  ASSERT_EQ(answered.RoundTrip(Get("/leader"))->result(), http::status::ok);
  ExpectServing();
  EXPECT_TRUE(stuck2.WaitClosed(absl::Milliseconds(500)));
}

TEST_F(HttpServerTest, AbruptDisconnectsDoNotDisturbOthers) {
  for (int i = 0; i < 50; ++i) {
    RawHttpConnection mid_request(server_->port());
    ASSERT_TRUE(mid_request.Send("GET /lea"));
    mid_request.Abort();
    RawHttpConnection before_reading(server_->port());
    ASSERT_TRUE(before_reading.Send(Get("/metrics") + Get("/metrics") + Get("/leader")));
    before_reading.Abort();
  }
  ExpectServing();
}

TEST_F(HttpServerTest, ShutdownClosesIdleConnectionsAndReturns) {
  std::vector<std::unique_ptr<RawHttpConnection>> conns;
  for (int i = 0; i < 10; ++i) {
    conns.push_back(std::make_unique<RawHttpConnection>(server_->port()));
    ASSERT_EQ(conns.back()->RoundTrip(Get("/leader"))->result(), http::status::ok);
  }
  const absl::Time start = absl::Now();
  server_->Shutdown(SystemClock()->Monotonic() + absl::Seconds(5));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  for (auto& c : conns) EXPECT_TRUE(c->WaitClosed(absl::Seconds(1)));
  RawHttpConnection after(server_->port());
  EXPECT_FALSE(after.connected() && after.RoundTrip(Get("/leader")).has_value());
}

TEST(HttpServerStartTest, RejectsBadAddresses) {
  ApiTestEnv env;
  for (const char* address : {"nonsense", "127.0.0.1:99999", "not-an-ip:80", "127.0.0.1:x"}) {
    HttpServerOptions options;
    options.address = address;
    HttpServer server(options, &env.context);
    absl::Status status = server.Start();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
  }
}

TEST(HttpServerStartTest, PortInUseIsUnavailable) {
  ApiTestEnv env;
  HttpServerOptions options;
  options.address = "127.0.0.1:0";
  HttpServer first(options, &env.context);
  ASSERT_TRUE(first.Start().ok());
  options.address = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second(options, &env.context);
  EXPECT_EQ(second.Start().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace baton

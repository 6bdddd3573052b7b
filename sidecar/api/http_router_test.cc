// The promise-keeping routes of HttpRouter, without a network: GET /leader
// with a client_id and POST /leader/ack (sockets and limits are
// http_server_test.cc's business).
#include "sidecar/api/http_router.h"

#include <optional>
#include <string>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "gtest/gtest.h"
#include "sidecar/api/leadership_proto.h"
#include "sidecar/api/local_api.h"
#include "sidecar/api/testing/api_test_env.h"

namespace baton {
namespace {

using testing::ApiTestEnv;
using testing::Following;
using testing::kOther;
using testing::Leading;

namespace http = boost::beast::http;

constexpr int64_t kToken = 5;

class HttpRouterTest : public ::testing::Test {
 protected:
  HttpRouter::Response Handle(http::verb method, const std::string& target,
                              HttpRoutes routes = HttpRoutes::kApi) {
    const HttpRouter router(routes, absl::Milliseconds(1), &env_.context);
    return router.Handle(HttpRouter::Request(method, target, 11)).response;
  }
  HttpRouter::Response Get(const std::string& target) { return Handle(http::verb::get, target); }
  HttpRouter::Response Post(const std::string& target) { return Handle(http::verb::post, target); }

  boost::json::object Json(const HttpRouter::Response& res) {
    EXPECT_EQ(res.result(), http::status::ok) << res.body();
    return boost::json::parse(res.body()).as_object();
  }

  // Leading with token kToken for 10s; returns the snapshot's leader_until.
  MonoTime Lead() {
    const Leadership l = Leading(env_.clock, kToken, absl::Seconds(10));
    env_.publisher.Publish(l);
    return l.leader_until;
  }

  std::optional<MonoTime> Outstanding() {
    return env_.publisher.OutstandingUntil(kToken, env_.clock.Monotonic());
  }

  ApiTestEnv env_;
};

TEST_F(HttpRouterTest, LeaderAnswerToANamedClientIsAPromiseUntilItsDeadline) {
  const MonoTime until = Lead();
  EXPECT_FALSE(Outstanding());
  EXPECT_EQ(Json(Get("/leader?client_id=app-1")).at("isLeader"), true);
  EXPECT_EQ(Outstanding(), until);
}

TEST_F(HttpRouterTest, AcknowledgementVoidsTheClientsPromise) {
  Lead();
  ASSERT_EQ(Json(Get("/leader?client_id=app-1")).at("isLeader"), true);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=5")).at("acknowledged"), true);
  EXPECT_FALSE(Outstanding());
  // Nothing left to acknowledge.
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=5")).at("acknowledged"), false);
}

TEST_F(HttpRouterTest, AcknowledgementNamingADeadlineLeavesALaterPromiseOutstanding) {
  Lead();
  const std::string first =
      Json(Get("/leader?client_id=app-1")).at("validUntilBoottime").as_string().c_str();
  // A renew, and a later answer to the same client.
  env_.clock.Advance(absl::Seconds(2));
  const MonoTime later = Lead();
  const std::string second =
      Json(Get("/leader?client_id=app-1")).at("validUntilBoottime").as_string().c_str();
  ASSERT_NE(first, second);
  // The acknowledgement of the first answer, echoing its validUntilBoottime,
  // arrives late: the later promise stays outstanding.
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=5&valid_until_boottime=" + first))
                .at("acknowledged"),
            false);
  EXPECT_EQ(Outstanding(), later);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=5&valid_until_boottime=" + second))
                .at("acknowledged"),
            true);
  EXPECT_FALSE(Outstanding());
}

TEST_F(HttpRouterTest, MalformedAckDeadlinesAre400WithAReason) {
  const MonoTime until = Lead();
  ASSERT_EQ(Json(Get("/leader?client_id=app-1")).at("isLeader"), true);
  for (const std::string value : {"", "3610", "-3610s", "3610.5.5s", "1e3s",
                                  "3610s&valid_until_boottime=3611s", "36%2010s"}) {
    const std::string target =
        "/leader/ack?client_id=app-1&fencing_token=5&valid_until_boottime=" + value;
    const HttpRouter::Response res = Post(target);
    EXPECT_EQ(res.result(), http::status::bad_request) << target;
    EXPECT_TRUE(res.body().starts_with("valid_until_boottime ")) << target << ": " << res.body();
  }
  EXPECT_EQ(Outstanding(), until);
}

TEST_F(HttpRouterTest, AcknowledgementOfAnotherTermOrClientVoidsNothing) {
  const MonoTime until = Lead();
  ASSERT_EQ(Json(Get("/leader?client_id=app-1")).at("isLeader"), true);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=4")).at("acknowledged"), false);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-2&fencing_token=5")).at("acknowledged"), false);
  EXPECT_EQ(Outstanding(), until);
}

TEST_F(HttpRouterTest, AnonymousLeaderAnswersArePromisesThatOnlyLapse) {
  const MonoTime until = Lead();
  ASSERT_EQ(Json(Get("/leader")).at("isLeader"), true);
  EXPECT_EQ(Outstanding(), until);
  env_.clock.Advance(absl::Seconds(10));
  EXPECT_FALSE(Outstanding());
}

TEST_F(HttpRouterTest, CachedAnswersArePromisesToo) {
  const MonoTime until = Lead();
  // Both within one reuse window, so the second is served the first's body.
  ASSERT_EQ(Json(Get("/leader?client_id=app-1")).at("isLeader"), true);
  ASSERT_EQ(Json(Get("/leader?client_id=app-2")).at("isLeader"), true);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=5")).at("acknowledged"), true);
  EXPECT_EQ(Outstanding(), until);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-2&fencing_token=5")).at("acknowledged"), true);
  EXPECT_FALSE(Outstanding());
}

TEST_F(HttpRouterTest, NotLeaderAnswersPromiseNothing) {
  env_.publisher.Publish(Following(env_.clock, kOther, kToken));
  EXPECT_EQ(Json(Get("/leader?client_id=app-1")).at("isLeader"), false);
  Lead();
  env_.publisher.StepDown();
  const boost::json::object json = Json(Get("/leader?client_id=app-1"));
  EXPECT_EQ(json.at("isLeader"), false);
  EXPECT_EQ(json.at("steppingDown"), true);
  EXPECT_FALSE(Outstanding());
}

TEST_F(HttpRouterTest, LeaderJsonCarriesTheRevisionAndTheBoottimeDeadline) {
  Leadership l = Leading(env_.clock, kToken, absl::Seconds(10));
  l.fencing_revision = ResourceVersion::Parse("4711");
  env_.publisher.Publish(l);
  const boost::json::object json = Json(Get("/leader"));
  EXPECT_EQ(json.at("fencingRevision"), "4711");
  EXPECT_EQ(json.at("fencingRevisionDecimal"), "4711");
  // FakeClock's monotonic time starts one hour after its origin.
  EXPECT_EQ(json.at("validUntilBoottime"), "3610s");
  // Evaluated at the end of the 1ms reuse window; the deadline is absolute.
  EXPECT_EQ(json.at("validFor"), "9.999s");
}

TEST_F(HttpRouterTest, RootNamesThisSidecarOnlyWhileItLeadsAndPromisesIt) {
  const MonoTime until = Lead();
  EXPECT_EQ(Json(Get("/")).at("name"), testing::kSelf);
  EXPECT_EQ(Outstanding(), until);
  env_.publisher.StepDown();
  EXPECT_EQ(Json(Get("/")).at("name"), "");
  env_.publisher.Publish(Following(env_.clock, kOther, kToken + 1));
  EXPECT_EQ(Json(Get("/")).at("name"), kOther);
}

// The deadline an answer told, as the ledger keeps it.
MonoTime Told(const boost::json::object& answer) {
  return *ParseDeadline(answer.at("validUntilBoottime").as_string().c_str());
}

TEST_F(HttpRouterTest, AnUnnamedReaderIsPromisedAtMostTheUnnamedBound) {
  env_.context.max_unnamed_valid_for = absl::Seconds(1);
  Lead();
  const boost::json::object answer = Json(Get("/leader"));
  EXPECT_EQ(answer.at("isLeader"), true);
  const MonoTime now = env_.clock.Monotonic();
  EXPECT_LE(Told(answer), now + absl::Seconds(1));
  EXPECT_GT(Told(answer), now + (absl::Seconds(1) - kBoundedDeadlineStep));
  EXPECT_EQ(Outstanding(), Told(answer)) << "the ledger holds exactly what was told";
  // The leader-elector route is an unnamed answer too.
  env_.clock.Advance(absl::Seconds(2));
  EXPECT_FALSE(Outstanding());
  EXPECT_EQ(Json(Get("/")).at("name"), testing::kSelf);
  EXPECT_LE(*Outstanding(), env_.clock.Monotonic() + absl::Seconds(1));
}

TEST_F(HttpRouterTest, ANamedReaderGetsTheWholePromiseAndAnyReaderMayAskForLessOrMore) {
  env_.context.max_unnamed_valid_for = absl::Seconds(1);
  const MonoTime until = Lead();
  EXPECT_EQ(Told(Json(Get("/leader?client_id=app"))), until);
  const MonoTime now = env_.clock.Monotonic();
  EXPECT_LE(Told(Json(Get("/leader?client_id=app&max_valid_for=250ms"))),
            now + absl::Milliseconds(250));
  // An unnamed reader that asks for a longer promise gets it, and a step-down
  // then waits for it.
  const MonoTime asked = Told(Json(Get("/leader?max_valid_for=5s")));
  EXPECT_GT(asked, now + absl::Seconds(4));
  EXPECT_EQ(Outstanding(), until);
}

TEST_F(HttpRouterTest, ACachedBodyIsServedOnlyToAReaderPromisedTheSameDeadline) {
  env_.context.max_unnamed_valid_for = absl::Seconds(1);
  const MonoTime until = Lead();
  // One router, one cache; both requests within its window.
  const HttpRouter router(HttpRoutes::kApi, absl::Milliseconds(1), &env_.context);
  auto get = [&](const std::string& target) {
    return Json(router.Handle(HttpRouter::Request(http::verb::get, target, 11)).response);
  };
  EXPECT_EQ(Told(get("/leader?client_id=app")), until);
  EXPECT_LE(Told(get("/leader")), env_.clock.Monotonic() + absl::Seconds(1));
  EXPECT_EQ(Told(get("/leader?client_id=app")), until);
}

TEST_F(HttpRouterTest, MalformedBoundsAre400WithAReason) {
  Lead();
  for (const char* bound : {"", "0s", "-1s", "500us", "soon", "1s&max_valid_for=2s"}) {
    const HttpRouter::Response res = Get(std::string("/leader?max_valid_for=") + bound);
    EXPECT_EQ(res.result(), http::status::bad_request) << bound;
    EXPECT_TRUE(res.body().starts_with("max_valid_for ")) << bound << ": " << res.body();
  }
  EXPECT_FALSE(Outstanding());
}

TEST_F(HttpRouterTest, MalformedClientIdsAre400WithAReason) {
  Lead();
  const std::string too_long(65, 'a');
  for (const std::string& query : std::vector<std::string>{
           "client_id=", "client_id=a%2Fb", "client_id=a/b", "client_id=" + too_long,
           "client_id=\xc3\xa4", "client_id=a&client_id=b"}) {
    for (const std::string& target : {"/leader?" + query, "/leader/ack?fencing_token=5&" + query}) {
      const http::verb method =
          target.starts_with("/leader/ack") ? http::verb::post : http::verb::get;
      const HttpRouter::Response res = Handle(method, target);
      EXPECT_EQ(res.result(), http::status::bad_request) << target;
      EXPECT_TRUE(res.body().starts_with("client_id ")) << target << ": " << res.body();
    }
  }
  EXPECT_FALSE(Outstanding());
}

TEST_F(HttpRouterTest, LongestAllowedClientIdAndUnknownParametersAreFine) {
  const MonoTime until = Lead();
  const std::string id = std::string(60, 'a') + "._-Z";
  EXPECT_EQ(Json(Get("/leader?pretty=1&client_id=" + id + "&x")).at("isLeader"), true);
  EXPECT_EQ(Outstanding(), until);
  EXPECT_EQ(Json(Post("/leader/ack?fencing_token=5&unknown=1&client_id=" + id)).at("acknowledged"),
            true);
}

TEST_F(HttpRouterTest, AckNeedsAClientIdAndAToken) {
  Lead();
  for (const std::string target :
       {"/leader/ack", "/leader/ack?fencing_token=5", "/leader/ack?client_id=app-1",
        "/leader/ack?client_id=app-1&fencing_token=",
        "/leader/ack?client_id=app-1&fencing_token=-1",
        "/leader/ack?client_id=app-1&fencing_token=+5",
        "/leader/ack?client_id=app-1&fencing_token=5x",
        "/leader/ack?client_id=app-1&fencing_token=2147483648"}) {
    const HttpRouter::Response res = Post(target);
    EXPECT_EQ(res.result(), http::status::bad_request) << target;
    EXPECT_FALSE(res.body().empty()) << target;
  }
}

TEST_F(HttpRouterTest, AckGoesThroughTheHookWhenSet) {
  std::string seen_client;
  int64_t seen_token = -1;
  std::optional<MonoTime> seen_up_to;
  env_.context.hooks.acknowledge = [&](const Acknowledgement& ack) {
    seen_client = ack.client_id;
    seen_token = ack.fencing_token;
    seen_up_to = ack.up_to;
    return true;
  };
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=2147483647")).at("acknowledged"),
            true);
  EXPECT_EQ(seen_client, "app-1");
  EXPECT_EQ(seen_token, 2147483647);
  EXPECT_EQ(seen_up_to, std::nullopt);
  EXPECT_EQ(Json(Post("/leader/ack?client_id=app-1&fencing_token=7&valid_until_boottime=12.5s"))
                .at("acknowledged"),
            true);
  EXPECT_EQ(seen_up_to, MonoTime::FromSinceOrigin(absl::Milliseconds(12500)));
}

TEST_F(HttpRouterTest, AckIsAPostOnTheApiAddressOnly) {
  const HttpRouter::Response get = Get("/leader/ack?client_id=app-1&fencing_token=5");
  EXPECT_EQ(get.result(), http::status::method_not_allowed);
  EXPECT_EQ(get[http::field::allow], "POST");
  EXPECT_EQ(Handle(http::verb::post, "/leader/ack?client_id=app-1&fencing_token=5",
                   HttpRoutes::kProbesAndMetrics)
                .result(),
            http::status::not_found);
}

TEST_F(HttpRouterTest, ResignAnswerSaysNotLeaderAndPromisesNothing) {
  Lead();
  env_.context.hooks.resign = [&] {
    env_.publisher.StepDown();
    return absl::OkStatus();
  };
  const boost::json::object json = Json(Post("/resign"));
  EXPECT_EQ(json.at("wasLeader"), true);
  EXPECT_EQ(json.at("leadership").at("isLeader"), false);
  EXPECT_FALSE(Outstanding());
}

}  // namespace
}  // namespace baton

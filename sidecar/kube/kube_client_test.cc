#include "sidecar/kube/kube_client.h"

#include <sys/stat.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/kube/testing/test_files.h"
#include "sidecar/kube/testing/test_pki.h"
#include "sidecar/kube/testing/tls_test_server.h"

namespace baton::kube {
namespace {

namespace http = boost::beast::http;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IssueTestCert;
using testing::JsonResponse;
using testing::NewTempDir;
using testing::NewTestCa;
using testing::ReplaceFile;
using testing::TestCert;
using testing::TlsTestServer;
using testing::WriteFile;

struct Observed {
  std::string verb;
  int code;
};

class KubeClientTest : public ::testing::Test {
 protected:
  KubeClientTest()
      : ca_(NewTestCa("test-ca")),
        server_cert_(IssueTestCert(ca_, "apiserver", {"localhost"}, {"127.0.0.1"})) {}

  void Serve(TlsTestServer::Handler handler) {
    server_ = std::make_unique<TlsTestServer>(TlsTestServer::Options{server_cert_, ""},
                                              std::move(handler));
  }

  RestConfig Config() const {
    RestConfig c;
    c.endpoint.host = "127.0.0.1";
    c.endpoint.port = server_->port();
    c.endpoint.ca_pem = ca_.cert_pem;
    c.bearer_token = "static-token";
    c.request_timeout = absl::Seconds(5);
    return c;
  }

  std::unique_ptr<KubeClient> Client(RestConfig config, const Clock* clock = SystemClock()) {
    KubeClientOptions options;
    options.clock = clock;
    options.observer = [this](std::string_view verb, int code, absl::Duration) {
      absl::MutexLock lock(&mu_);
      observed_.push_back({std::string(verb), code});
    };
    absl::StatusOr<std::unique_ptr<KubeClient>> c =
        KubeClient::Create(std::move(config), std::move(options));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  std::vector<std::string> ObservedStrings() {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    out.reserve(observed_.size());
    for (const Observed& o : observed_) out.push_back(absl::StrCat(o.verb, " ", o.code));
    return out;
  }

  TestCert ca_;
  TestCert server_cert_;
  std::unique_ptr<TlsTestServer> server_;
  absl::Mutex mu_;
  std::vector<Observed> observed_ ABSL_GUARDED_BY(mu_);
};

TEST_F(KubeClientTest, SendsIdentityAndCredentials) {
  HttpRequest seen;
  Serve(TlsTestServer::Serve([&](const HttpRequest& r) {
    seen = r;
    return JsonResponse(200, "{}");
  }));
  RestConfig config = Config();
  config.base_path = "/prefix";
  auto client = Client(config);
  ASSERT_TRUE(client->Call(ApiVerb::kUpdate, "/apis/x", R"({"a":1})").ok());
  EXPECT_EQ(seen.method(), http::verb::put);
  EXPECT_EQ(seen.target(), "/prefix/apis/x");
  EXPECT_EQ(seen[http::field::authorization], "Bearer static-token");
  EXPECT_EQ(seen[http::field::user_agent], RestConfig::DefaultUserAgent());
  EXPECT_EQ(seen[http::field::accept], "application/json");
  EXPECT_EQ(seen[http::field::content_type], "application/json");
  EXPECT_EQ(seen.body(), R"({"a":1})");
}

TEST_F(KubeClientTest, MethodFollowsTheVerb) {
  std::vector<std::string> methods;
  Serve(TlsTestServer::Serve([&](const HttpRequest& r) {
    methods.push_back(std::string(r.method_string()));
    return JsonResponse(200, "{}");
  }));
  auto client = Client(Config());
  for (ApiVerb v : {ApiVerb::kGet, ApiVerb::kList, ApiVerb::kCreate, ApiVerb::kUpdate}) {
    ASSERT_TRUE(client->Call(v, "/x").ok());
  }
  EXPECT_THAT(methods, ElementsAre("GET", "GET", "POST", "PUT"));
}

TEST_F(KubeClientTest, TokenFileRotationIsPickedUp) {
  std::vector<std::string> tokens;
  Serve(TlsTestServer::Serve([&](const HttpRequest& r) {
    tokens.push_back(std::string(r[http::field::authorization]));
    return JsonResponse(200, "{}");
  }));
  const std::string token_path = NewTempDir() + "/token";
  WriteFile(token_path, "old-token\n");
  RestConfig config = Config();
  config.bearer_token = "ignored-when-a-file-is-set";
  config.bearer_token_file = token_path;
  auto client = Client(config);
  ASSERT_TRUE(client->Call(ApiVerb::kGet, "/x").ok());
  ReplaceFile(token_path, "new-token");
  ASSERT_TRUE(client->Call(ApiVerb::kGet, "/x").ok());
  EXPECT_THAT(tokens, ElementsAre("Bearer old-token", "Bearer new-token"));
}

// A client certificate from an exec plugin is presented, and once it expires
// the plugin's next one replaces it on new connections.
TEST_F(KubeClientTest, ExecPluginClientCertificateIsReplacedWhenItExpires) {
  const TestCert client_ca = NewTestCa("client-ca");
  std::vector<std::string> cns;
  absl::Mutex cns_mu;
  server_ = std::make_unique<TlsTestServer>(
      TlsTestServer::Options{server_cert_, client_ca.cert_pem},
      [&](TlsTestServer::Connection& conn) {
        {
          absl::MutexLock lock(&cns_mu);
          cns.push_back(conn.client_cn());
        }
        TlsTestServer::Serve([](const HttpRequest&) { return JsonResponse(200, "{}"); })(conn);
      });
  // Run n prints credential n: alice's expires in two seconds, bob's never.
  const std::string dir = NewTempDir();
  auto credential = [&](const std::string& cn, const std::string& expiry) {
    const TestCert cert = IssueTestCert(client_ca, cn, {}, {});
    boost::json::object status{{"clientCertificateData", cert.cert_pem},
                               {"clientKeyData", cert.key_pem}};
    if (!expiry.empty()) status["expirationTimestamp"] = expiry;
    return boost::json::serialize(
        boost::json::object{{"apiVersion", "client.authentication.k8s.io/v1"},
                            {"kind", "ExecCredential"},
                            {"status", std::move(status)}});
  };
  // Whole seconds: RFC 3339 as plugins print it.
  FakeClock clock;
  const absl::Time alice_expires = absl::FromUnixSeconds(absl::ToUnixSeconds(clock.Wall()) + 2);
  WriteFile(dir + "/cred.1", credential("alice", absl::FormatTime(absl::RFC3339_sec, alice_expires,
                                                                  absl::UTCTimeZone())));
  WriteFile(dir + "/cred.2", credential("bob", ""));
  WriteFile(dir + "/plugin", absl::StrCat("#!/bin/sh\nn=$(($(cat ", dir,
                                          "/runs 2>/dev/null || echo 0) + 1))\necho $n >", dir,
                                          "/runs\ncat ", dir, "/cred.$n\n"));
  ASSERT_EQ(chmod((dir + "/plugin").c_str(), 0755), 0);
  RestConfig config = Config();
  config.bearer_token.clear();
  config.exec = ExecPlugin();
  config.exec->api_version = "client.authentication.k8s.io/v1";
  config.exec->command = dir + "/plugin";
  config.exec->interactive = ExecPlugin::Interactive::kNever;
  auto client = Client(config, &clock);
  ASSERT_NE(client, nullptr);

  ASSERT_TRUE(client->Call(ApiVerb::kGet, "/x").ok());
  clock.Advance(absl::Seconds(3));
  absl::StatusOr<boost::json::value> after = client->Call(ApiVerb::kGet, "/x");
  ASSERT_TRUE(after.ok()) << after.status();
  absl::MutexLock lock(&cns_mu);
  EXPECT_THAT(cns, ElementsAre("alice", "bob"));  // a new connection with the new certificate
}

TEST_F(KubeClientTest, CreateFailsFastWithoutAToken) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return JsonResponse(200, "{}"); }));
  RestConfig config = Config();
  config.bearer_token_file = NewTempDir() + "/absent";
  EXPECT_FALSE(KubeClient::Create(config).ok());
}

TEST_F(KubeClientTest, ConflictMeansAlreadyExistsOnCreateAndAbortedOnUpdate) {
  Serve(TlsTestServer::Serve([](const HttpRequest& r) {
    return JsonResponse(409,
                        absl::StrCat(R"({"kind":"Status","reason":")",
                                     r.method() == http::verb::post ? "AlreadyExists" : "Conflict",
                                     R"(","message":"m","code":409})"));
  }));
  auto client = Client(Config());
  const absl::Status created = client->Call(ApiVerb::kCreate, "/leases", "{}").status();
  EXPECT_EQ(created.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(created.message()),
              HasSubstr("POST /leases: HTTP 409, reason=AlreadyExists: m"));
  const absl::Status updated = client->Call(ApiVerb::kUpdate, "/leases/x", "{}").status();
  EXPECT_EQ(updated.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(updated.message()), HasSubstr("reason=Conflict"));
}

TEST_F(KubeClientTest, RetryAfterIsExposed) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) {
    HttpResponse r = JsonResponse(429, R"({"kind":"Status","reason":"TooManyRequests"})");
    r.set(http::field::retry_after, "2");
    return r;
  }));
  auto client = Client(Config());
  const absl::Status s = client->Call(ApiVerb::kGet, "/x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RetryAfter(s), absl::Seconds(2));
}

TEST_F(KubeClientTest, MalformedJsonIsInternal) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return JsonResponse(200, "{not json"); }));
  auto client = Client(Config());
  EXPECT_EQ(client->Call(ApiVerb::kGet, "/x").status().code(), absl::StatusCode::kInternal);
}

TEST_F(KubeClientTest, ObserverSeesVerbAndCodeAndZeroForTransportFailures) {
  std::atomic<int> n{0};
  Serve([&](TlsTestServer::Connection& conn) {
    while (auto r = conn.ReadRequest()) {
      const int i = n++;
      if (i >= 2) {  // also the retry on a fresh connection
        conn.Reset();
        return;
      }
      conn.Write(JsonResponse(i == 0 ? 200 : 404, "{}"));
    }
  });
  auto client = Client(Config());
  (void)client->Call(ApiVerb::kGet, "/x");
  (void)client->Call(ApiVerb::kUpdate, "/x", "{}");
  (void)client->Call(ApiVerb::kCreate, "/x", "{}");
  EXPECT_THAT(ObservedStrings(), ElementsAre("get 200", "update 404", "create 0"));
}

TEST_F(KubeClientTest, SequentialCallsShareOneConnection) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return JsonResponse(200, "{}"); }));
  auto client = Client(Config());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(client->Call(ApiVerb::kGet, "/x").ok());
  EXPECT_EQ(client->connections_dialled(), 1);
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(KubeClientTest, ConcurrentCallsDoNotWaitForEachOther) {
  // The first request on the server blocks until the second one arrives:
  // only a client that runs them on two connections at once completes.
  absl::Notification first_arrived;
  absl::Notification second_arrived;
  std::atomic<int> n{0};
  Serve(TlsTestServer::Serve([&](const HttpRequest&) {
    if (n++ == 0) {
      first_arrived.Notify();
      second_arrived.WaitForNotificationWithTimeout(absl::Seconds(5));
    } else {
      second_arrived.Notify();
    }
    return JsonResponse(200, "{}");
  }));
  auto client = Client(Config());
  std::thread other([&] { EXPECT_TRUE(client->Call(ApiVerb::kGet, "/a").ok()); });
  first_arrived.WaitForNotification();  // /a holds its connection
  EXPECT_TRUE(client->Call(ApiVerb::kGet, "/b").ok());
  other.join();
  EXPECT_TRUE(second_arrived.HasBeenNotified());
  EXPECT_EQ(client->connections_dialled(), 2);
}

TEST_F(KubeClientTest, RequestTimeoutComesFromConfig) {
  Serve([](TlsTestServer::Connection& conn) {
    conn.ReadRequest();
    conn.ReadRequest();
  });
  RestConfig config = Config();
  config.request_timeout = absl::Milliseconds(200);
  auto client = Client(config);
  const absl::Time start = absl::Now();
  EXPECT_EQ(client->Call(ApiVerb::kGet, "/x").status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(KubeClientTest, WatchReportsOpenThenStreamsAndMapsErrors) {
  std::atomic<int> n{0};
  Serve([&](TlsTestServer::Connection& conn) {
    while (conn.ReadRequest()) {
      if (n++ == 0) {
        conn.WriteRaw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
      } else {
        conn.Write(JsonResponse(403, R"({"kind":"Status","reason":"Forbidden","message":"no"})"));
      }
    }
  });
  auto client = Client(Config());
  bool opened = false;
  std::string data;
  auto on_data = [&](absl::string_view d) {
    data.append(d.data(), d.size());
    return absl::OkStatus();
  };
  EXPECT_TRUE(client
                  ->Watch(
                      "/w", absl::Seconds(5), [&] { opened = true; }, on_data)
                  .ok());
  EXPECT_TRUE(opened);
  EXPECT_EQ(data, "abc");
  opened = false;
  const absl::Status s = client->Watch(
      "/w", absl::Seconds(5), [&] { opened = true; }, on_data);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(s.message()), HasSubstr("reason=Forbidden: no"));
  EXPECT_FALSE(opened);
  EXPECT_THAT(ObservedStrings(), ElementsAre("watch 200", "watch 403"));
}

TEST_F(KubeClientTest, CancelStopsAWatchPromptly) {
  Serve([](TlsTestServer::Connection& conn) {
    conn.ReadRequest();
    conn.WriteRaw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    conn.ReadRequest();
  });
  auto client = Client(Config());
  absl::Notification opened;
  std::thread canceller([&] {
    opened.WaitForNotificationWithTimeout(absl::Seconds(5));
    client->Cancel();
  });
  const absl::Time start = absl::Now();
  const absl::Status s = client->Watch(
      "/w", absl::Minutes(5), [&] { opened.Notify(); },
      [](absl::string_view) { return absl::OkStatus(); });
  canceller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

}  // namespace
}  // namespace baton::kube

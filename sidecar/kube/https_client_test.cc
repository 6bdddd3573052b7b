#include "sidecar/kube/https_client.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/testing/test_pki.h"
#include "sidecar/kube/testing/tls_test_server.h"

namespace baton::kube {
namespace {

// A deadline `timeout` from now on the clients' (real) clock.
Deadline DeadlineIn(absl::Duration timeout) { return SystemClock()->Monotonic() + timeout; }

namespace http = boost::beast::http;
using ::testing::HasSubstr;
using testing::IssueTestCert;
using testing::JsonResponse;
using testing::NewTestCa;
using testing::TestCert;
using testing::TlsTestServer;

HttpRequest Get(const std::string& target = "/x") {
  return HttpRequest(http::verb::get, target, 11);
}

HttpResponse Ok(std::string body = "{}") { return JsonResponse(200, std::move(body)); }

class HttpsClientTest : public ::testing::Test {
 protected:
  HttpsClientTest()
      : ca_(NewTestCa("test-ca")),
        server_cert_(IssueTestCert(ca_, "apiserver", {"localhost"}, {"127.0.0.1"})) {}

  void Serve(TlsTestServer::Handler handler, std::string client_ca = "") {
    server_ = std::make_unique<TlsTestServer>(
        TlsTestServer::Options{server_cert_, std::move(client_ca)}, std::move(handler));
  }

  HttpsClientOptions Options(const std::string& host = "127.0.0.1") const {
    HttpsClientOptions o;
    o.endpoint.host = host;
    o.endpoint.port = server_->port();
    o.endpoint.ca_pem = ca_.cert_pem;
    return o;
  }

  std::unique_ptr<HttpsClient> Client(HttpsClientOptions o) {
    absl::StatusOr<std::unique_ptr<HttpsClient>> c = HttpsClient::Create(std::move(o));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  std::unique_ptr<HttpsClient> Client() { return Client(Options()); }

  TestCert ca_;
  TestCert server_cert_;
  std::unique_ptr<TlsTestServer> server_;
};

TEST_F(HttpsClientTest, RoundTripVerifiesTheServerByIp) {
  std::string host_header;
  Serve(TlsTestServer::Serve([&](const HttpRequest& r) {
    host_header = std::string(r[http::field::host]);
    return Ok(R"({"a":1})");
  }));
  auto client = Client();
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->result_int(), 200);
  EXPECT_EQ(res->body(), R"({"a":1})");
  EXPECT_EQ(host_header, absl::StrCat("127.0.0.1:", server_->port()));
}

TEST_F(HttpsClientTest, SendsSniAndVerifiesADnsName) {
  std::string sni;
  Serve([&](TlsTestServer::Connection& conn) {
    sni = conn.sni();
    TlsTestServer::Serve([](const HttpRequest&) { return Ok(); })(conn);
  });
  auto client = Client(Options("localhost"));
  HttpRequest req = Get();
  ASSERT_TRUE(client->RoundTrip(req, DeadlineIn(absl::Seconds(5))).ok());
  EXPECT_EQ(sni, "localhost");
}

TEST_F(HttpsClientTest, NoSniForAnIpAddress) {
  std::string sni = "unset";
  Serve([&](TlsTestServer::Connection& conn) { sni = conn.sni(); });
  auto client = Client();
  HttpRequest req = Get();
  (void)client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(sni, "");
}

TEST_F(HttpsClientTest, RejectsAServerSignedByAnotherCa) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(); }));
  HttpsClientOptions o = Options();
  o.endpoint.ca_pem = NewTestCa("other-ca").cert_pem;
  auto client = Client(o);
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("server certificate rejected"));
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("local issuer"));
}

TEST_F(HttpsClientTest, RejectsTheWrongHostname) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(); }));
  HttpsClientOptions o = Options();
  o.endpoint.tls_server_name = "kubernetes.default.svc";
  auto client = Client(o);
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("hostname mismatch"));
}

TEST_F(HttpsClientTest, RejectsTheWrongIp) {
  server_cert_ = IssueTestCert(ca_, "apiserver", {"localhost"}, {"10.0.0.1"});
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(); }));
  auto client = Client();
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("IP address mismatch"));
}

TEST_F(HttpsClientTest, PresentsAClientCertificate) {
  const TestCert client_ca = NewTestCa("client-ca");
  const TestCert client_cert = IssueTestCert(client_ca, "system:admin", {}, {});
  std::string cn;
  Serve(
      [&](TlsTestServer::Connection& conn) {
        cn = conn.client_cn();
        TlsTestServer::Serve([](const HttpRequest&) { return Ok(); })(conn);
      },
      client_ca.cert_pem);
  HttpsClientOptions o = Options();
  o.endpoint.client_cert_pem = client_cert.cert_pem;
  o.endpoint.client_key_pem = client_cert.key_pem;
  auto client = Client(o);
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(cn, "system:admin");
}

TEST_F(HttpsClientTest, CreateRefusesBadCredentials) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(); }));
  HttpsClientOptions o = Options();
  o.endpoint.ca_pem = "";
  EXPECT_EQ(HttpsClient::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.endpoint.ca_pem = "not a certificate";
  EXPECT_EQ(HttpsClient::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options();
  o.endpoint.client_cert_pem = server_cert_.cert_pem;
  EXPECT_EQ(HttpsClient::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.endpoint.client_key_pem = IssueTestCert(ca_, "other", {}, {}).key_pem;  // does not match
  EXPECT_EQ(HttpsClient::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpsClientTest, ReusesTheKeepAliveConnection) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(); }));
  auto client = Client();
  for (int i = 0; i < 5; ++i) {
    HttpRequest req = Get();
    ASSERT_TRUE(client->RoundTrip(req, DeadlineIn(absl::Seconds(5))).ok());
  }
  EXPECT_EQ(client->dial_count(), 1);
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(HttpsClientTest, ConnectionCloseMeansANewConnectionNextTime) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) {
    HttpResponse r = Ok();
    r.keep_alive(false);
    return r;
  }));
  auto client = Client();
  for (int i = 0; i < 3; ++i) {
    HttpRequest req = Get();
    ASSERT_TRUE(client->RoundTrip(req, DeadlineIn(absl::Seconds(5))).ok());
  }
  EXPECT_EQ(client->dial_count(), 3);
}

TEST_F(HttpsClientTest, RetriesOnceWhenTheServerClosedTheIdleConnection) {
  // Each connection answers one request and then closes without saying so.
  Serve([](TlsTestServer::Connection& conn) {
    if (conn.ReadRequest()) conn.Write(Ok());
  });
  auto client = Client();
  for (int i = 0; i < 3; ++i) {
    HttpRequest req = Get();
    absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
    ASSERT_TRUE(res.ok()) << i << ": " << res.status();
  }
  EXPECT_EQ(client->dial_count(), 3);
}

TEST_F(HttpsClientTest, TimesOutAndRedialsNextTime) {
  std::atomic<int> conns{0};
  Serve([&](TlsTestServer::Connection& conn) {
    if (conns++ == 0) {
      conn.ReadRequest();
      conn.ReadRequest();  // never answers; returns when the client gives up
      return;
    }
    TlsTestServer::Serve([](const HttpRequest&) { return Ok(); })(conn);
  });
  auto client = Client();
  HttpRequest req = Get();
  const absl::Time start = absl::Now();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Milliseconds(300)));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(res.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(took, absl::Milliseconds(290));
  EXPECT_LT(took, absl::Seconds(2));

  HttpRequest again = Get();
  ASSERT_TRUE(client->RoundTrip(again, DeadlineIn(absl::Seconds(5))).ok());
  EXPECT_EQ(client->dial_count(), 2);
}

TEST_F(HttpsClientTest, ResetMidResponseIsUnavailableAndTheNextRequestRedials) {
  std::atomic<int> conns{0};
  Serve([&](TlsTestServer::Connection& conn) {
    if (conns++ == 0) {
      conn.ReadRequest();
      conn.WriteRaw("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\":");
      absl::SleepFor(absl::Milliseconds(50));
      conn.Reset();
      return;
    }
    TlsTestServer::Serve([](const HttpRequest&) { return Ok(); })(conn);
  });
  auto client = Client();
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kUnavailable) << res.status();

  HttpRequest again = Get();
  ASSERT_TRUE(client->RoundTrip(again, DeadlineIn(absl::Seconds(5))).ok());
  EXPECT_EQ(client->dial_count(), 2);
}

TEST_F(HttpsClientTest, ConnectionRefusedIsUnavailable) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(); }));
  HttpsClientOptions o = Options();
  server_.reset();  // nothing listens on the port any more
  auto client = Client(o);
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("connect"));
}

TEST_F(HttpsClientTest, OversizedBodyIsAnError) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) { return Ok(std::string(5 << 20, 'x')); }));
  auto client = Client();
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(10)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("larger than 4194304"));
}

TEST_F(HttpsClientTest, OversizedHeaderIsAnError) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) {
    HttpResponse r = Ok();
    for (int i = 0; i < 10; ++i) r.insert(absl::StrCat("X-Junk-", i), std::string(10 << 10, 'h'));
    return r;
  }));
  auto client = Client();
  HttpRequest req = Get();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(res.status().message()), HasSubstr("header larger"));
}

TEST_F(HttpsClientTest, MalformedResponsesAreErrorsNeverHangs) {
  for (const char* raw : {
           "NOT HTTP AT ALL\r\n\r\n",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
       }) {
    Serve([raw](TlsTestServer::Connection& conn) {
      conn.ReadRequest();
      conn.WriteRaw(raw);
    });
    auto client = Client();
    HttpRequest req = Get();
    absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(5)));
    EXPECT_EQ(res.status().code(), absl::StatusCode::kUnavailable) << raw << res.status();
  }
}

TEST_F(HttpsClientTest, CancelAbortsAHangingRequestPromptly) {
  absl::Notification hanging;
  Serve([&](TlsTestServer::Connection& conn) {
    conn.ReadRequest();
    if (!hanging.HasBeenNotified()) hanging.Notify();
    conn.ReadRequest();
  });
  auto client = Client();
  std::thread canceller([&] {
    hanging.WaitForNotification();  // the request is in flight, unanswered
    client->Cancel();
  });
  HttpRequest req = Get();
  const absl::Time start = absl::Now();
  absl::StatusOr<HttpResponse> res = client->RoundTrip(req, DeadlineIn(absl::Seconds(30)));
  EXPECT_EQ(res.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  canceller.join();
  HttpRequest after = Get();
  EXPECT_EQ(client->RoundTrip(after, DeadlineIn(absl::Seconds(5))).status().code(),
            absl::StatusCode::kCancelled);
}

TEST_F(HttpsClientTest, StreamDeliversChunksAsTheyArrive) {
  absl::Notification first_seen;
  Serve([&](TlsTestServer::Connection& conn) {
    conn.ReadRequest();
    conn.WriteRaw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    conn.WriteRaw("5\r\nhello\r\n");
    // The next chunk is sent only after the client has seen the first: a
    // client that waits for more data than has arrived would hang here.
    first_seen.WaitForNotificationWithTimeout(absl::Seconds(5));
    conn.WriteRaw("6\r\n world\r\n0\r\n\r\n");
  });
  auto client = Client();
  HttpRequest req = Get();
  std::string got;
  bool opened = false;
  absl::StatusOr<HttpResponse> res = client->Stream(
      req, DeadlineIn(absl::Seconds(5)), DeadlineIn(absl::Seconds(10)),
      [&](const HttpResponse& head) { opened = head.result_int() == 200; },
      [&](absl::string_view data) {
        got.append(data.data(), data.size());
        if (!first_seen.HasBeenNotified()) first_seen.Notify();
        return absl::OkStatus();
      });
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_TRUE(opened);
  EXPECT_EQ(got, "hello world");
}

TEST_F(HttpsClientTest, StreamReturnsANon200AnswerWhole) {
  Serve(TlsTestServer::Serve([](const HttpRequest&) {
    return JsonResponse(403, R"({"kind":"Status","reason":"Forbidden"})");
  }));
  auto client = Client();
  HttpRequest req = Get();
  bool called = false;
  absl::StatusOr<HttpResponse> res = client->Stream(
      req, DeadlineIn(absl::Seconds(5)), DeadlineIn(absl::Seconds(10)),
      [&](const HttpResponse&) { called = true; },
      [&](absl::string_view) {
        called = true;
        return absl::OkStatus();
      });
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->result_int(), 403);
  EXPECT_EQ(res->body(), R"({"kind":"Status","reason":"Forbidden"})");
  EXPECT_FALSE(called);
}

TEST_F(HttpsClientTest, StreamEndsAtItsDeadline) {
  Serve([](TlsTestServer::Connection& conn) {
    conn.ReadRequest();
    conn.WriteRaw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    conn.ReadRequest();
  });
  auto client = Client();
  HttpRequest req = Get();
  const absl::Time start = absl::Now();
  absl::StatusOr<HttpResponse> res = client->Stream(
      req, DeadlineIn(absl::Seconds(5)), DeadlineIn(absl::Milliseconds(300)),
      [](const HttpResponse&) {}, [](absl::string_view) { return absl::OkStatus(); });
  EXPECT_EQ(res.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

}  // namespace
}  // namespace baton::kube

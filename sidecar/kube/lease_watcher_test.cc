#include "sidecar/kube/lease_watcher.h"

#include <atomic>
#include <functional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/kube/testing/test_pki.h"
#include "sidecar/kube/testing/tls_test_server.h"

namespace baton::kube {
namespace {

using ::testing::HasSubstr;
using testing::IssueTestCert;
using testing::JsonResponse;
using testing::NewTestCa;
using testing::TestCert;
using testing::TlsTestServer;

std::string Lease(const std::string& rv, const std::string& holder) {
  return absl::StrCat(R"({"kind":"Lease","metadata":{"name":"lock","namespace":"ns",)",
                      R"("resourceVersion":")", rv, R"("},"spec":{"holderIdentity":")", holder,
                      R"(","leaseDurationSeconds":15}})");
}

std::string Event(const std::string& type, const std::string& object) {
  return absl::StrCat(R"({"type":")", type, R"(","object":)", object, "}\n");
}

std::string Bookmark(const std::string& rv) {
  return Event("BOOKMARK",
               absl::StrCat(R"({"kind":"Lease","metadata":{"resourceVersion":")", rv, R"("}})"));
}

bool StartChunked(TlsTestServer::Connection& conn) {
  return conn.WriteRaw(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n");
}

bool Chunk(TlsTestServer::Connection& conn, absl::string_view data) {
  return conn.WriteRaw(absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n"));
}

bool EndChunked(TlsTestServer::Connection& conn) { return conn.WriteRaw("0\r\n\r\n"); }

// Collects what a watcher reports, and waits for it.
class Recorder {
 public:
  void OnRecord(const LeaseEvent& e) {
    absl::MutexLock lock(&mu_);
    records_.push_back(e.record.has_value()
                           ? absl::StrCat(e.record->holder_identity, "@", e.resource_version)
                           : absl::StrCat("absent@", e.resource_version));
  }
  void OnStatus(const absl::Status& s) {
    absl::MutexLock lock(&mu_);
    statuses_.push_back(s);
  }
  // Waits until `records` were seen in this order (as a prefix).
  bool WaitForRecords(const std::vector<std::string>& want) {
    auto seen = [&] {
      mu_.AssertHeld();
      return records_ == want;
    };
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&seen), absl::Seconds(10));
  }
  bool WaitForStatus(absl::StatusCode code) {
    auto has = [&] {
      mu_.AssertHeld();
      for (const absl::Status& s : statuses_) {
        if (s.code() == code) return true;
      }
      return false;
    };
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&has), absl::Seconds(10));
  }
  std::vector<std::string> records() {
    absl::MutexLock lock(&mu_);
    return records_;
  }
  std::vector<absl::Status> statuses() {
    absl::MutexLock lock(&mu_);
    return statuses_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> records_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
};

class LeaseWatcherTest : public ::testing::Test {
 protected:
  using WatchScript = std::function<void(TlsTestServer::Connection&, const HttpRequest&, int n)>;

  // Serves GETs of the Lease from `get` and watch n (0, 1, ...) with `watch`.
  void Serve(const std::function<HttpResponse()>& get, const WatchScript& watch) {
    const TestCert ca = NewTestCa("ca");
    ca_pem_ = ca.cert_pem;
    server_ = std::make_unique<TlsTestServer>(
        TlsTestServer::Options{IssueTestCert(ca, "apiserver", {}, {"127.0.0.1"}), ""},
        [this, get, watch](TlsTestServer::Connection& conn) {
          while (std::optional<HttpRequest> r = conn.ReadRequest()) {
            if (absl::StrContains(std::string(r->target()), "watch=1")) {
              {
                absl::MutexLock lock(&mu_);
                watch_targets_.push_back(std::string(r->target()));
              }
              watch(conn, *r, watches_++);
              return;  // a watch connection is never reused by the script
            }
            gets_++;
            if (!conn.Write(get())) return;
          }
        });
  }

  void StartWatcher() {
    RestConfig config;
    config.endpoint.host = "127.0.0.1";
    config.endpoint.port = server_->port();
    config.endpoint.ca_pem = ca_pem_;
    config.bearer_token = "t";
    config.request_timeout = absl::Seconds(5);
    KubeClientOptions client_options;
    client_options.max_response_bytes = 64 << 10;
    LeaseWatcherOptions options;
    options.min_backoff = absl::Milliseconds(10);
    options.max_backoff = kMaxBackoff;
    watcher_ = std::make_unique<LeaseWatcher>(
        *KubeClient::Create(config, client_options), "ns", "lock", &clock_,
        [this](const LeaseEvent& e) { recorder_.OnRecord(e); },
        [this](const absl::Status& s) { recorder_.OnStatus(s); }, options);
    watcher_->Start();
  }

  void TearDown() override {
    if (watcher_ != nullptr) watcher_->Stop();
    // The server's connection threads write into this fixture: they end
    // here, before its members are destroyed.
    server_.reset();
  }

  std::vector<std::string> watch_targets() {
    absl::MutexLock lock(&mu_);
    return watch_targets_;
  }

  // Waits until the server has seen `n` watch requests.
  bool WaitForWatches(size_t n) {
    auto seen = [&] {
      mu_.AssertHeld();
      return watch_targets_.size() >= n;
    };
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&seen), absl::Seconds(10));
  }

  // Once the watcher sleeps in a backoff, moves its clock past the longest
  // one and waits for the watch that follows, the server's `n`th.
  void EndBackoffUntilWatch(size_t n) {
    ASSERT_TRUE(clock_.AwaitSleepers(1, absl::Seconds(10)));
    clock_.Advance(kMaxBackoff);
    ASSERT_TRUE(WaitForWatches(n));
  }

  static constexpr absl::Duration kMaxBackoff = absl::Milliseconds(50);
  // The watcher's: its backoff and how long a watch lasted move only when a
  // test moves this.
  FakeClock clock_;
  std::string ca_pem_;
  std::unique_ptr<TlsTestServer> server_;
  std::atomic<int> gets_{0};
  std::atomic<int> watches_{0};
  absl::Mutex mu_;
  std::vector<std::string> watch_targets_ ABSL_GUARDED_BY(mu_);
  Recorder recorder_;
  std::unique_ptr<LeaseWatcher> watcher_;
};

// Keeps a watch open until the client goes away.
void Hold(TlsTestServer::Connection& conn) { conn.ReadRequest(); }

TEST_F(LeaseWatcherTest, ReadsThenFollowsEveryChange) {
  Serve([] { return JsonResponse(200, Lease("5", "a")); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int n) {
          if (n > 0) return Hold(conn);
          StartChunked(conn);
          Chunk(conn, Event("MODIFIED", Lease("6", "b")));
          Chunk(conn, Event("DELETED", Lease("7", "b")));
          Chunk(conn, Event("ADDED", Lease("8", "c")));
          Hold(conn);
        });
  StartWatcher();
  EXPECT_TRUE(recorder_.WaitForRecords({"a@5", "b@6", "absent@7", "c@8"}))
      << ::testing::PrintToString(recorder_.records());
  const std::vector<std::string> targets = watch_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_THAT(targets[0], HasSubstr("/apis/coordination.k8s.io/v1/namespaces/ns/leases?watch=1"));
  EXPECT_THAT(targets[0], HasSubstr("fieldSelector=metadata.name%3Dlock"));
  EXPECT_THAT(targets[0], HasSubstr("allowWatchBookmarks=true"));
  EXPECT_THAT(targets[0], HasSubstr("timeoutSeconds="));
  // Watched from "now": the Lease's own version may predate the watch cache.
  EXPECT_THAT(targets[0], ::testing::Not(HasSubstr("resourceVersion=")));
}

TEST_F(LeaseWatcherTest, ReportsAnOpenWatch) {
  Serve([] { return JsonResponse(200, Lease("5", "a")); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int) {
          StartChunked(conn);
          Hold(conn);
        });
  StartWatcher();
  EXPECT_TRUE(recorder_.WaitForStatus(absl::StatusCode::kOk));
}

TEST_F(LeaseWatcherTest, AnEventSplitAcrossReadsIsReassembled) {
  Serve([] { return JsonResponse(200, Lease("5", "a")); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int n) {
          if (n > 0) return Hold(conn);
          StartChunked(conn);
          const std::string events =
              Event("MODIFIED", Lease("6", "b")) + "\n" + Event("MODIFIED", Lease("7", "c"));
          for (char c : events) {  // one byte per chunk and per TLS record
            Chunk(conn, std::string(1, c));
          }
          Hold(conn);
        });
  StartWatcher();
  EXPECT_TRUE(recorder_.WaitForRecords({"a@5", "b@6", "c@7"}))
      << ::testing::PrintToString(recorder_.records());
}

TEST_F(LeaseWatcherTest, ReconnectsFromTheLastResourceVersionIncludingBookmarks) {
  Serve([] { return JsonResponse(200, Lease("5", "a")); },
        [this](TlsTestServer::Connection& conn, const HttpRequest&, int n) {
          if (n == 0) {
            StartChunked(conn);
            // One TLS record: once b@6 is delivered, the bookmark has been
            // read as well, and a reset discards only what is unread.
            Chunk(conn, Event("MODIFIED", Lease("6", "b")) + Bookmark("9"));
            recorder_.WaitForRecords({"a@5", "b@6"});
            conn.Reset();  // the API server went away
            return;
          }
          if (n == 1) {  // the server ends this one normally, after a while
            StartChunked(conn);
            Chunk(conn, Event("MODIFIED", Lease("10", "c")));
            recorder_.WaitForRecords({"a@5", "b@6", "c@10"});
            clock_.Advance(absl::Minutes(1));
            EndChunked(conn);
            return;
          }
          StartChunked(conn);
          Hold(conn);
        });
  StartWatcher();
  ASSERT_TRUE(recorder_.WaitForStatus(absl::StatusCode::kUnavailable));  // the reset
  EndBackoffUntilWatch(2);
  // A watch that ended normally after a while is taken up again at once.
  ASSERT_TRUE(WaitForWatches(3));
  EXPECT_EQ(recorder_.records(), (std::vector<std::string>{"a@5", "b@6", "c@10"}));
  const std::vector<std::string> targets = watch_targets();
  EXPECT_EQ(gets_.load(), 1);  // no re-read: the resourceVersion was still good
  EXPECT_THAT(targets[1], ::testing::EndsWith("resourceVersion=9"));
  EXPECT_THAT(targets[2], ::testing::EndsWith("resourceVersion=10"));
}

TEST_F(LeaseWatcherTest, GoneMeansReadAgainAndWatchFromNow) {
  Serve(
      [this] { return JsonResponse(200, gets_.load() == 1 ? Lease("5", "a") : Lease("50", "z")); },
      [this](TlsTestServer::Connection& conn, const HttpRequest&, int n) {
        if (n == 0) {  // ends normally after a while: the next one is from 6
          StartChunked(conn);
          Chunk(conn, Event("MODIFIED", Lease("6", "b")));
          recorder_.WaitForRecords({"a@5", "b@6"});
          clock_.Advance(absl::Minutes(1));
          EndChunked(conn);
          return;
        }
        StartChunked(conn);
        if (n == 1) {
          Chunk(conn, Event("ERROR", R"j({"kind":"Status","apiVersion":"v1","status":"Failure",)j"
                                     R"j("message":"too old resource version: 6 (40)",)j"
                                     R"j("reason":"Expired","code":410})j"));
        }
        Hold(conn);
      });
  StartWatcher();
  EXPECT_TRUE(recorder_.WaitForRecords({"a@5", "b@6", "z@50"}))
      << ::testing::PrintToString(recorder_.records());
  ASSERT_TRUE(WaitForWatches(3));
  const std::vector<std::string> targets = watch_targets();
  EXPECT_THAT(targets[1], ::testing::EndsWith("resourceVersion=6"));
  EXPECT_THAT(targets[2], ::testing::Not(HasSubstr("resourceVersion=")));
  EXPECT_EQ(gets_.load(), 2);
}

TEST_F(LeaseWatcherTest, GoneOnAWatchFromNowIsAFailureNotALoop) {
  Serve([] { return JsonResponse(200, Lease("50", "z")); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int) {
          StartChunked(conn);
          Chunk(conn, Event("ERROR", R"({"kind":"Status","reason":"Expired","code":410})"));
          Hold(conn);
        });
  StartWatcher();
  ASSERT_TRUE(recorder_.WaitForStatus(absl::StatusCode::kFailedPrecondition));
  // Paced by the backoff, not a tight loop: each watch fails, and the next
  // one waits until the clock has passed the backoff.
  for (int watches = 1; watches <= 3; ++watches) {
    ASSERT_TRUE(clock_.AwaitSleepers(1, absl::Seconds(10)));
    EXPECT_EQ(watches_.load(), watches);
    clock_.Advance(kMaxBackoff);
    ASSERT_TRUE(WaitForWatches(watches + 1));
  }
  EXPECT_EQ(gets_.load(), 1);
}

TEST_F(LeaseWatcherTest, AnAbsentLeaseIsReportedAndWatchedFromNow) {
  Serve([] { return JsonResponse(404, R"({"kind":"Status","reason":"NotFound","code":404})"); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int n) {
          if (n > 0) return Hold(conn);
          StartChunked(conn);
          Chunk(conn, Event("ADDED", Lease("3", "new")));
          Hold(conn);
        });
  StartWatcher();
  EXPECT_TRUE(recorder_.WaitForRecords({"absent@", "new@3"}));
  EXPECT_THAT(watch_targets()[0], ::testing::Not(HasSubstr("resourceVersion=")));
}

TEST_F(LeaseWatcherTest, ForbiddenWatchIsReportedSoTheOwnerCanPoll) {
  Serve(
      [] { return JsonResponse(200, Lease("5", "a")); },
      [](TlsTestServer::Connection& conn, const HttpRequest&, int) {
        conn.Write(JsonResponse(
            403, R"({"kind":"Status","reason":"Forbidden","message":"cannot watch","code":403})"));
      });
  StartWatcher();
  ASSERT_TRUE(recorder_.WaitForStatus(absl::StatusCode::kPermissionDenied));
  for (const absl::Status& s : recorder_.statuses()) {
    if (absl::IsPermissionDenied(s)) {
      EXPECT_THAT(std::string(s.message()), HasSubstr("cannot watch"));
    }
  }
}

TEST_F(LeaseWatcherTest, MalformedAndOversizedEventsAreErrorsThenItReconnects) {
  Serve([] { return JsonResponse(200, Lease("5", "a")); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int n) {
          StartChunked(conn);
          if (n == 0) {
            Chunk(conn, "{this is not json}\n");
          } else if (n == 1) {
            Chunk(conn, std::string(100 << 10, 'x'));  // no newline, over the 64 KiB limit
          } else {
            Chunk(conn, Event("MODIFIED", Lease("6", "b")));
          }
          Hold(conn);
        });
  StartWatcher();
  EndBackoffUntilWatch(2);  // after the malformed event
  EndBackoffUntilWatch(3);  // after the oversized one
  EXPECT_TRUE(recorder_.WaitForRecords({"a@5", "b@6"}));
  int internal = 0;
  for (const absl::Status& s : recorder_.statuses()) internal += absl::IsInternal(s);
  EXPECT_EQ(internal, 2);
}

TEST_F(LeaseWatcherTest, StopReturnsPromptlyDuringAWatch) {
  Serve([] { return JsonResponse(200, Lease("5", "a")); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int) {
          StartChunked(conn);
          Hold(conn);
        });
  StartWatcher();
  ASSERT_TRUE(recorder_.WaitForStatus(absl::StatusCode::kOk));
  const absl::Time start = absl::Now();
  watcher_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
}

TEST_F(LeaseWatcherTest, StopReturnsPromptlyDuringBackoff) {
  Serve([] { return JsonResponse(503, "{}"); },
        [](TlsTestServer::Connection& conn, const HttpRequest&, int) {});
  StartWatcher();
  ASSERT_TRUE(recorder_.WaitForStatus(absl::StatusCode::kUnavailable));
  ASSERT_TRUE(clock_.AwaitSleepers(1, absl::Seconds(10)));
  const absl::Time start = absl::Now();
  watcher_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
}

}  // namespace
}  // namespace baton::kube

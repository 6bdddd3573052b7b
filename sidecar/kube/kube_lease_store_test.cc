#include "sidecar/kube/kube_lease_store.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/lease_json.h"
#include "sidecar/kube/micro_time.h"
#include "sidecar/kube/testing/test_pki.h"
#include "sidecar/kube/testing/tls_test_server.h"

namespace baton::kube {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::IssueTestCert;
using testing::JsonResponse;
using testing::NewTestCa;
using testing::TestCert;
using testing::TlsTestServer;

constexpr char kPath[] = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock";

// One Lease with the API server's resourceVersion rules, plus fields baton
// does not know. Records every request as "METHOD target".
class FakeLeaseApi {
 public:
  FakeLeaseApi() {
    lease_ = json::parse(R"({
      "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
      "metadata": {"name": "lock", "namespace": "ns", "uid": "u-1", "resourceVersion": "10",
                   "labels": {"team": "a"}, "annotations": {"note": "keep me"}},
      "spec": {"holderIdentity": "other", "leaseDurationSeconds": 15,
               "acquireTime": "2026-09-17T13:37:24.807518Z",
               "renewTime": "2026-09-17T13:37:30.000001Z", "leaseTransitions": 4,
               "strategy": "OldestEmulationVersion", "preferredHolder": "me",
               "futureField": {"x": [1, 2]}}})")
                 .as_object();
  }

  HttpResponse Handle(const HttpRequest& r) {
    absl::MutexLock lock(&mu_);
    requests_.push_back(absl::StrCat(std::string(r.method_string()), " ", std::string(r.target())));
    bodies_.push_back(r.body());
    if (r.method() == http::verb::get) return JsonResponse(200, json::serialize(lease_));
    json::object sent = json::parse(r.body()).as_object();
    if (r.method() == http::verb::post) {
      return JsonResponse(409, R"({"kind":"Status","reason":"AlreadyExists","code":409})");
    }
    if (LeaseMetadataString(sent, "resourceVersion") !=
        LeaseMetadataString(lease_, "resourceVersion")) {
      return JsonResponse(409,
                          R"({"kind":"Status","reason":"Conflict","message":"stale","code":409})");
    }
    sent["metadata"].as_object()["resourceVersion"] = std::to_string(++rv_);
    lease_ = sent;
    return JsonResponse(200, json::serialize(lease_));
  }

  // Another writer changes the Lease.
  void BumpVersion() {
    absl::MutexLock lock(&mu_);
    lease_["metadata"].as_object()["resourceVersion"] = std::to_string(++rv_);
  }
  std::vector<std::string> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  std::string last_body() {
    absl::MutexLock lock(&mu_);
    return bodies_.back();
  }
  json::object lease() {
    absl::MutexLock lock(&mu_);
    return lease_;
  }

 private:
  absl::Mutex mu_;
  json::object lease_ ABSL_GUARDED_BY(mu_);
  int rv_ ABSL_GUARDED_BY(mu_) = 10;
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
};

class KubeLeaseStoreTest : public ::testing::Test {
 protected:
  KubeLeaseStoreTest() {
    const TestCert ca = NewTestCa("ca");
    server_ = std::make_unique<TlsTestServer>(
        TlsTestServer::Options{IssueTestCert(ca, "apiserver", {}, {"127.0.0.1"}), ""},
        TlsTestServer::Serve([this](const HttpRequest& r) { return api_.Handle(r); }));
    RestConfig config;
    config.endpoint.host = "127.0.0.1";
    config.endpoint.port = server_->port();
    config.endpoint.ca_pem = ca.cert_pem;
    config.bearer_token = "t";
    store_ = std::make_unique<KubeLeaseStore>(
        std::shared_ptr<KubeClient>(*KubeClient::Create(config)), "ns", "lock");
  }

  FakeLeaseApi api_;
  std::unique_ptr<TlsTestServer> server_;
  std::unique_ptr<KubeLeaseStore> store_;
};

TEST_F(KubeLeaseStoreTest, GetReadsTheElectionFields) {
  absl::StatusOr<LeaseRecord> r = store_->Get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->holder_identity, "other");
  EXPECT_EQ(r->lease_duration_seconds, 15);
  EXPECT_EQ(r->lease_transitions, 4);
  EXPECT_EQ(r->acquire_time, *ParseMicroTime("2026-09-17T13:37:24.807518Z"));
  EXPECT_EQ(r->renew_time, *ParseMicroTime("2026-09-17T13:37:30.000001Z"));
  EXPECT_EQ(r->resource_version, "10");
  EXPECT_EQ(r->uid, "u-1");
  EXPECT_THAT(api_.requests(), ElementsAre(absl::StrCat("GET ", kPath)));
}

TEST_F(KubeLeaseStoreTest, UpdateKeepsEveryFieldBatonDoesNotKnow) {
  LeaseRecord r = *store_->Get();
  r.holder_identity = "me";
  r.lease_transitions = 5;
  r.renew_time = absl::FromUnixMicros(1789652300123456);
  absl::StatusOr<LeaseRecord> written = store_->Update(r);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->resource_version, "11");
  EXPECT_EQ(written->holder_identity, "me");

  const json::object sent = json::parse(api_.last_body()).as_object();
  const json::object& spec = sent.at("spec").as_object();
  const json::object& metadata = sent.at("metadata").as_object();
  EXPECT_EQ(metadata.at("resourceVersion"), "10");
  EXPECT_EQ(json::serialize(metadata.at("labels")), R"({"team":"a"})");
  EXPECT_EQ(json::serialize(metadata.at("annotations")), R"({"note":"keep me"})");
  EXPECT_EQ(spec.at("strategy"), "OldestEmulationVersion");
  EXPECT_EQ(spec.at("preferredHolder"), "me");
  EXPECT_EQ(json::serialize(spec.at("futureField")), R"({"x":[1,2]})");
  EXPECT_EQ(spec.at("holderIdentity"), "me");
  EXPECT_EQ(spec.at("leaseTransitions"), 5);
  EXPECT_EQ(spec.at("renewTime"), "2026-09-17T13:38:20.123456Z");
  EXPECT_EQ(spec.at("acquireTime"), "2026-09-17T13:37:24.807518Z");
  EXPECT_THAT(api_.requests(),
              ElementsAre(absl::StrCat("GET ", kPath), absl::StrCat("PUT ", kPath)));
}

TEST_F(KubeLeaseStoreTest, RenewsFromTheObjectItWroteLast) {
  LeaseRecord r = *store_->Get();
  r = *store_->Update(r);
  r.renew_time = absl::FromUnixSeconds(1789652400);
  ASSERT_TRUE(store_->Update(r).ok());
  EXPECT_EQ(api_.requests().size(), 3u);  // GET, PUT, PUT: no re-read
  EXPECT_EQ(LeaseMetadataString(api_.lease(), "resourceVersion"), "12");
}

TEST_F(KubeLeaseStoreTest, ARecordFromElsewhereIsWrittenOnlyIfStillCurrent) {
  // The record came from a watch, not from this store: it must not PUT a
  // minimal object (the server would accept it and drop labels).
  LeaseRecord from_watch = *LeaseRecordFromJson(api_.lease());
  from_watch.holder_identity = "me";
  absl::StatusOr<LeaseRecord> written = store_->Update(from_watch);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(api_.requests(),
              ElementsAre(absl::StrCat("GET ", kPath), absl::StrCat("PUT ", kPath)));
  EXPECT_EQ(LeaseMetadataString(api_.lease(), "resourceVersion"), "11");
  EXPECT_EQ(json::serialize(api_.lease().at("metadata").at("labels")), R"({"team":"a"})");
}

TEST_F(KubeLeaseStoreTest, AStaleRecordFromElsewhereIsAbortedWithoutWriting) {
  LeaseRecord from_watch = *LeaseRecordFromJson(api_.lease());
  api_.BumpVersion();
  const absl::Status s = store_->Update(from_watch).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("changed since resourceVersion 10"));
  EXPECT_THAT(api_.requests(), ElementsAre(absl::StrCat("GET ", kPath)));
}

TEST_F(KubeLeaseStoreTest, AStaleCachedRecordGetsTheServersConflict) {
  LeaseRecord r = *store_->Get();
  api_.BumpVersion();
  const absl::Status s = store_->Update(r).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("reason=Conflict: stale"));
}

TEST_F(KubeLeaseStoreTest, UpdateWithoutResourceVersionIsRefused) {
  LeaseRecord r;
  r.holder_identity = "me";
  EXPECT_EQ(store_->Update(r).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(api_.requests().empty());
}

TEST_F(KubeLeaseStoreTest, CreatePostsAMinimalLeaseToTheCollection) {
  LeaseRecord r;
  r.holder_identity = "me";
  r.lease_duration_seconds = 15;
  r.acquire_time = r.renew_time = absl::FromUnixMicros(1789652244807518);
  r.resource_version = "99";  // ignored
  const absl::Status s = store_->Create(r).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(api_.requests(),
              ElementsAre("POST /apis/coordination.k8s.io/v1/namespaces/ns/leases"));
  EXPECT_EQ(api_.last_body(),
            R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
            R"("metadata":{"name":"lock","namespace":"ns"},)"
            R"("spec":{"holderIdentity":"me","leaseDurationSeconds":15,"leaseTransitions":0,)"
            R"("acquireTime":"2026-09-17T13:37:24.807518Z",)"
            R"("renewTime":"2026-09-17T13:37:24.807518Z"}})");
}

TEST(LeaseJsonTest, AbsentTimesAreRemovedAndEmptyHolderWritten) {
  json::object lease = json::parse(R"({"spec":{"acquireTime":"x","renewTime":"y"}})").as_object();
  LeaseRecord r;
  r.resource_version = "5";
  ApplyLeaseRecord(r, lease);
  EXPECT_EQ(lease, json::parse(R"({"metadata":{"resourceVersion":"5"},)"
                               R"("spec":{"holderIdentity":"","leaseDurationSeconds":0,)"
                               R"("leaseTransitions":0}})")
                       .as_object());
}

TEST(LeaseJsonTest, MalformedLeasesAreInternalErrors) {
  for (const char* bad :
       {R"({"spec":{"renewTime":"2026-09-17 13:37:24"}})", R"({"spec":{"leaseTransitions":"4"}})",
        R"({"spec":{"leaseDurationSeconds":4294967296}})", R"({"spec":{"holderIdentity":7}})",
        R"({"metadata":{"resourceVersion":10}})"}) {
    EXPECT_EQ(LeaseRecordFromJson(json::parse(bad).as_object()).status().code(),
              absl::StatusCode::kInternal)
        << bad;
  }
  EXPECT_TRUE(LeaseRecordFromJson(json::object()).ok());
}

TEST(LeaseJsonTest, PathsAreEncoded) {
  EXPECT_EQ(LeasePath("ns", "a b/c"),
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/a%20b%2Fc");
  EXPECT_EQ(LeasesPath(""), "/apis/coordination.k8s.io/v1/leases");
}

}  // namespace
}  // namespace baton::kube

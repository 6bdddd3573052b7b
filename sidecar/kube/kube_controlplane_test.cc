// The kube client against a real kube-apiserver + etcd (tests/support):
// behaviour a hand-written fake would only assume.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/event_recorder.h"
#include "sidecar/kube/kube_client.h"
#include "sidecar/kube/kube_lease_store.h"
#include "sidecar/kube/kubeconfig.h"
#include "sidecar/kube/lease_json.h"
#include "sidecar/kube/lease_list.h"
#include "sidecar/kube/lease_watcher.h"
#include "sidecar/kube/read_file.h"
#include "sidecar/kube/testing/controlplane_fixture.h"
#include "sidecar/kube/testing/test_files.h"

namespace baton::kube {
namespace {

using ::testing::HasSubstr;
using testing::KubeControlPlaneTest;
using testing::NewRecord;
using testing::WatchLog;

TEST_F(KubeControlPlaneTest, GetCreateUpdateAndTheirErrors) {
  KubeLeaseStore store = AdminStore("lock");
  EXPECT_EQ(store.Get().status().code(), absl::StatusCode::kNotFound);

  absl::StatusOr<LeaseRecord> created = store.Create(NewRecord("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->resource_version.empty());
  EXPECT_FALSE(created->uid.empty());
  EXPECT_EQ(created->holder_identity, "a");

  const absl::Status duplicate = store.Create(NewRecord("b")).status();
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(duplicate.message()), HasSubstr("reason=AlreadyExists"));

  absl::StatusOr<LeaseRecord> read = store.Get();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, *created);

  // A second candidate reads the same version; the first writes; the
  // second's write carries a stale resourceVersion and the server refuses it.
  KubeLeaseStore rival = AdminStore("lock");
  LeaseRecord rivals_view = *rival.Get();
  LeaseRecord renewed = *read;
  renewed.renew_time = absl::Now();
  absl::StatusOr<LeaseRecord> updated = store.Update(renewed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(updated->resource_version, read->resource_version);
  rivals_view.holder_identity = "b";
  rivals_view.lease_transitions++;
  const absl::Status stale = rival.Update(rivals_view).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(stale.message()), HasSubstr("reason=Conflict"));
  EXPECT_THAT(std::string(stale.message()), HasSubstr("the object has been modified"));

  // MicroTime round-trips through the server at microsecond precision.
  const absl::Time want = absl::FromUnixMicros(absl::ToUnixMicros(*renewed.renew_time));
  EXPECT_EQ(updated->renew_time, want);

  // Leases allow create-on-update, so a conditional PUT of a deleted Lease
  // is a Conflict, not NotFound: "re-read", which then finds nothing.
  Kubectl({"delete", "lease", "lock"});
  LeaseRecord after_delete = *updated;
  after_delete.renew_time = absl::Now();
  const absl::Status gone = store.Update(after_delete).status();
  std::printf("update of a deleted Lease: %s\n", gone.ToString().c_str());
  EXPECT_EQ(gone.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store.Get().status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KubeControlPlaneTest, LabelsAndAnnotationsSurviveAnUpdate) {
  KubeLeaseStore store = AdminStore("lock");
  ASSERT_TRUE(store.Create(NewRecord("a")).ok());
  Kubectl({"label", "lease", "lock", "team=payments"});
  Kubectl({"annotate", "lease", "lock", "example.com/owner=oncall"});

  LeaseRecord r = *store.Get();
  r.holder_identity = "b";
  r.lease_transitions = 1;
  ASSERT_TRUE(store.Update(r).ok());
  r = *store.Get();
  r.renew_time = absl::Now();
  ASSERT_TRUE(store.Update(r).ok());

  const boost::json::value lease =
      boost::json::parse(Kubectl({"get", "lease", "lock", "-o", "json"}));
  EXPECT_EQ(lease.at("metadata").at("labels").at("team"), "payments");
  EXPECT_EQ(lease.at("metadata").at("annotations").at("example.com/owner"), "oncall");
  EXPECT_EQ(lease.at("spec").at("holderIdentity"), "b");
  EXPECT_EQ(lease.at("spec").at("leaseTransitions"), 1);
}

TEST_F(KubeControlPlaneTest, BadMicroTimeIsRefusedWithTheServersParseMessage) {
  std::shared_ptr<KubeClient> client = Client(AdminConfig());
  boost::json::object lease = NewLeaseObject(ns_, "lock");
  lease["spec"] =
      boost::json::parse(R"({"holderIdentity":"a","renewTime":"2026-09-17T13:37:24Z"})");
  absl::StatusOr<HttpResponse> raw =
      client->Send(ApiVerb::kCreate, LeasesPath(ns_), boost::json::serialize(lease));
  ASSERT_TRUE(raw.ok()) << raw.status();
  const int code = static_cast<int>(raw->result_int());
  const absl::Status s = StatusFromResponse(ApiVerb::kCreate, "POST leases", code, raw->body());
  std::printf("bad MicroTime: HTTP %d: %s\n", code, std::string(s.message()).c_str());
  EXPECT_THAT(raw->result_int(), ::testing::AnyOf(400, 422));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("2006-01-02T15:04:05.000000Z07:00"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("2026-09-17T13:37:24Z"));
}

TEST_F(KubeControlPlaneTest, RoleWithoutTheVerbIsPermissionDenied) {
  GrantLeaseVerbs("getter", "get");
  absl::StatusOr<std::string> kubeconfig = cp_.TokenKubeconfig(ns_, "getter");
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  absl::StatusOr<RestConfig> config = LoadKubeconfig(*kubeconfig);
  ASSERT_TRUE(config.ok()) << config.status();
  KubeLeaseStore store(Client(*config), ns_, "lock");

  EXPECT_EQ(store.Get().status().code(), absl::StatusCode::kNotFound);  // get is allowed
  const absl::Status create = store.Create(NewRecord("a")).status();
  EXPECT_EQ(create.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(create.message()), HasSubstr("reason=Forbidden"));
  EXPECT_THAT(std::string(create.message()), HasSubstr("cannot create resource \"leases\""));

  // The watcher tells its owner, which falls back to polling.
  absl::Mutex mu;
  absl::Status reported;
  LeaseWatcherOptions options;
  options.max_backoff = absl::Milliseconds(200);
  LeaseWatcher watcher(
      *KubeClient::Create(*config), ns_, "lock", SystemClock(), [](const LeaseEvent&) {},
      [&](const absl::Status& s) {
        absl::MutexLock lock(&mu);
        if (!s.ok()) reported = s;
      },
      options);
  watcher.Start();
  {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(
                            +[](absl::Status* s) { return !s->ok(); }, &reported),
                        absl::Seconds(10));
    EXPECT_EQ(reported.code(), absl::StatusCode::kPermissionDenied) << reported;
    EXPECT_THAT(std::string(reported.message()), HasSubstr("cannot watch resource"));
  }
  watcher.Stop();
}

// The Events in this test's namespace about the Lease `lease`.
std::vector<boost::json::object> LeaseEvents(KubeClient& admin, const std::string& ns,
                                             const std::string& lease) {
  absl::StatusOr<boost::json::value> list =
      admin.Call(ApiVerb::kList, absl::StrCat("/apis/events.k8s.io/v1/namespaces/", ns, "/events"));
  EXPECT_TRUE(list.ok()) << list.status();
  std::vector<boost::json::object> events;
  if (!list.ok()) return events;
  for (const boost::json::value& item : list->at("items").as_array()) {
    const boost::json::object& event = item.as_object();
    if (event.at("regarding").at("name") == lease.c_str()) events.push_back(event);
  }
  return events;
}

EventRecord LeaderEvent(const std::string& note) {
  EventRecord record;
  record.reason = "LeaderElection";
  record.action = "BecameLeader";
  record.note = note;
  return record;
}

TEST_F(KubeControlPlaneTest, EventsOnTheLeaseWithTheRolesCreateEventsRule) {
  GrantLeaseVerbs("recorder", "get,create,update");
  // The rule deploy/base/role.yaml has.
  Kubectl(
      {"create", "role", "recorder-events", "--resource=events.events.k8s.io", "--verb=create"});
  Kubectl({"create", "rolebinding", "recorder-events", "--role=recorder-events",
           absl::StrCat("--serviceaccount=", ns_, ":recorder")});
  absl::StatusOr<std::string> kubeconfig = cp_.TokenKubeconfig(ns_, "recorder");
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  absl::StatusOr<RestConfig> config = LoadKubeconfig(*kubeconfig);
  ASSERT_TRUE(config.ok()) << config.status();

  EventRecorderOptions options;
  options.lease_namespace = ns_;
  options.lease_name = "lock";
  options.identity = "pod-a_x7k2q";
  options.burst = 2;
  options.refill = absl::Hours(1);
  EventRecorder recorder(*KubeClient::Create(*config), options, SystemClock());
  recorder.Start();
  recorder.Record(LeaderEvent("pod-a_x7k2q became leader (fencing token 0)"));
  recorder.Record(LeaderEvent("second"));
  recorder.Record(LeaderEvent("third: beyond the burst"));
  recorder.Stop(SystemClock()->Monotonic() + absl::Seconds(10));
  const EventRecorder::Counts counts = recorder.counts();
  EXPECT_EQ(counts.sent, 2u);
  EXPECT_EQ(counts.dropped, 1u);
  EXPECT_FALSE(counts.forbidden);

  std::vector<boost::json::object> events = LeaseEvents(*Client(AdminConfig()), ns_, "lock");
  ASSERT_EQ(events.size(), 2u);
  const boost::json::object* first = nullptr;
  for (const boost::json::object& e : events) {
    if (e.at("note") == "pod-a_x7k2q became leader (fencing token 0)") first = &e;
  }
  ASSERT_NE(first, nullptr) << boost::json::serialize(events[0]);
  EXPECT_EQ(first->at("reason"), "LeaderElection");
  EXPECT_EQ(first->at("action"), "BecameLeader");
  EXPECT_EQ(first->at("type"), "Normal");
  EXPECT_EQ(first->at("reportingController"), "baton");
  EXPECT_EQ(first->at("reportingInstance"), "pod-a_x7k2q");
  EXPECT_EQ(first->at("regarding").at("kind"), "Lease");
  EXPECT_EQ(first->at("regarding").at("namespace"), ns_.c_str());
}

TEST_F(KubeControlPlaneTest, ForbiddenEventsStopRecordingAndNothingElse) {
  GrantLeaseVerbs("no-events", "get,create,update");  // no rule for events
  absl::StatusOr<std::string> kubeconfig = cp_.TokenKubeconfig(ns_, "no-events");
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  absl::StatusOr<RestConfig> config = LoadKubeconfig(*kubeconfig);
  ASSERT_TRUE(config.ok()) << config.status();

  EventRecorderOptions options;
  options.lease_namespace = ns_;
  options.lease_name = "lock";
  options.identity = "pod-a_x7k2q";
  EventRecorder recorder(*KubeClient::Create(*config), options, SystemClock());
  recorder.Start();
  recorder.Record(LeaderEvent("refused"));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!recorder.counts().forbidden && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(recorder.counts().forbidden);
  // Later records are dropped at once, without a request.
  for (int i = 0; i < 5; ++i) recorder.Record(LeaderEvent("dropped"));
  recorder.Stop(SystemClock()->Monotonic() + absl::Seconds(10));
  EXPECT_EQ(recorder.counts().sent, 0u);
  EXPECT_EQ(recorder.counts().dropped, 6u);
  EXPECT_EQ(recorder.counts().failed, 0u);
  // The same client still holds its Lease.
  KubeLeaseStore store(Client(*config), ns_, "lock");
  EXPECT_TRUE(store.Create(NewRecord("pod-a_x7k2q")).ok());
  EXPECT_TRUE(LeaseEvents(*Client(AdminConfig()), ns_, "lock").empty());
}

TEST_F(KubeControlPlaneTest, BadTokenIsUnauthenticated) {
  RestConfig config = AdminConfig();
  config.endpoint.client_cert_pem.clear();
  config.endpoint.client_key_pem.clear();
  config.bearer_token = "not-a-valid-token";
  KubeLeaseStore store(Client(config), ns_, "lock");
  const absl::Status s = store.Get().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(s.message()), HasSubstr("HTTP 401"));
  EXPECT_THAT(std::string(s.message()), ::testing::Not(HasSubstr("not-a-valid-token")));
}

TEST_F(KubeControlPlaneTest, TokenFileRotationKeepsTheClientWorking) {
  GrantLeaseVerbs("rotor", "get,create,update");
  const std::string token_file = testing::NewTempDir() + "/token";
  absl::StatusOr<std::string> first = cp_.Token(ns_, "rotor");
  ASSERT_TRUE(first.ok()) << first.status();
  testing::WriteFile(token_file, *first);

  RestConfig config = AdminConfig();
  config.endpoint.client_cert_pem.clear();
  config.endpoint.client_key_pem.clear();
  config.bearer_token_file = token_file;
  KubeLeaseStore store(Client(config), ns_, "lock");
  ASSERT_TRUE(store.Create(NewRecord("a")).ok());

  // A bound token dies with its ServiceAccount's UID (once the API server's
  // token cache, 10 s, lets go of it).
  Kubectl({"delete", "serviceaccount", "rotor"});
  Kubectl({"create", "serviceaccount", "rotor"});
  absl::Status old_token = absl::OkStatus();
  for (const absl::Time until = absl::Now() + absl::Seconds(30);
       old_token.ok() && absl::Now() < until; absl::SleepFor(absl::Milliseconds(500))) {
    old_token = store.Get().status();
  }
  EXPECT_EQ(old_token.code(), absl::StatusCode::kUnauthenticated) << old_token;

  // The kubelet writes a fresh token; the client picks it up by itself.
  absl::StatusOr<std::string> second = cp_.Token(ns_, "rotor");
  ASSERT_TRUE(second.ok()) << second.status();
  testing::ReplaceFile(token_file, *second);
  absl::StatusOr<LeaseRecord> r = store.Get();
  ASSERT_TRUE(r.ok()) << r.status();
  r->renew_time = absl::Now();
  EXPECT_TRUE(store.Update(*r).ok());
}

TEST_F(KubeControlPlaneTest, WatchFollowsAnotherWriter) {
  KubeLeaseStore store = AdminStore("lock");
  ASSERT_TRUE(store.Create(NewRecord("a")).ok());

  WatchLog log;
  LeaseWatcher watcher(
      *KubeClient::Create(AdminConfig()), ns_, "lock", SystemClock(),
      [&](const LeaseEvent& e) { log.Add(e.record); }, nullptr);
  watcher.Start();
  ASSERT_TRUE(log.WaitForHolder("a", absl::Seconds(10)));

  Kubectl(
      {"patch", "lease", "lock", "--type=merge", "-p", R"({"spec":{"holderIdentity":"kubectl"}})"});
  EXPECT_TRUE(log.WaitForHolder("kubectl", absl::Seconds(10)));

  Kubectl({"delete", "lease", "lock"});
  EXPECT_TRUE(log.WaitForHolder("<absent>", absl::Seconds(10)));
  watcher.Stop();
}

TEST_F(KubeControlPlaneTest, ListLeasesInANamespaceAndEverywhere) {
  ASSERT_TRUE(AdminStore("one").Create(NewRecord("a")).ok());
  ASSERT_TRUE(AdminStore("two").Create(NewRecord("b")).ok());
  std::shared_ptr<KubeClient> client = Client(AdminConfig());
  absl::StatusOr<LeaseList> here = ListLeases(*client, ns_);
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_FALSE(here->resource_version.empty());
  ASSERT_EQ(here->items.size(), 2u);
  EXPECT_EQ(here->items[0].namespace_name, ns_);
  EXPECT_EQ(here->items[0].name, "one");
  EXPECT_EQ(here->items[0].record.holder_identity, "a");
  EXPECT_EQ(here->items[1].name, "two");
  absl::StatusOr<LeaseList> all = ListLeases(*client, "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_GE(all->items.size(), 2u);
  EXPECT_TRUE(std::any_of(all->items.begin(), all->items.end(), [&](const NamedLease& l) {
    return l.namespace_name == ns_ && l.name == "two";
  }));
}

TEST_F(KubeControlPlaneTest, WatchLeasesFromAListSeesEveryLaterChangeInOrder) {
  KubeLeaseStore one = AdminStore("one");
  LeaseRecord before = *one.Create(NewRecord("a"));
  std::shared_ptr<KubeClient> client = Client(AdminConfig());
  absl::StatusOr<LeaseList> list = ListLeases(*client, ns_);
  ASSERT_TRUE(list.ok()) << list.status();
  // Made after the list: the watch from its version must see all three.
  before.holder_identity = "b";
  ASSERT_TRUE(one.Update(before).ok());
  ASSERT_TRUE(AdminStore("two").Create(NewRecord("c")).ok());
  Kubectl({"delete", "lease", "one"});

  std::vector<std::string> seen;
  std::string rv = list->resource_version;
  const absl::Status done =
      WatchLeases(*client, ns_, rv, absl::Seconds(30), [&](const LeaseChange& change) {
        const char* type = change.type == LeaseChange::Type::kAdded      ? "ADDED"
                           : change.type == LeaseChange::Type::kModified ? "MODIFIED"
                                                                         : "DELETED";
        seen.push_back(absl::StrCat(type, " ", change.lease.namespace_name, "/", change.lease.name,
                                    " ", change.lease.record.holder_identity));
        if (seen.size() == 3) client->Cancel();
      });
  EXPECT_EQ(done.code(), absl::StatusCode::kCancelled) << done;
  EXPECT_THAT(seen, ::testing::ElementsAre(absl::StrCat("MODIFIED ", ns_, "/one b"),
                                           absl::StrCat("ADDED ", ns_, "/two c"),
                                           absl::StrCat("DELETED ", ns_, "/one ")));
  EXPECT_NE(rv, list->resource_version);
}

// An exec credential plugin against the real server: the ServiceAccount
// token it prints authenticates; once its expirationTimestamp has passed it
// is run again; a credential the server refuses (401) is dropped and the
// next request runs the plugin once more.
TEST_F(KubeControlPlaneTest, ExecPluginRunsAgainWhenItsCredentialExpiresOrIsRefused) {
  GrantLeaseVerbs("operator", "list");
  absl::StatusOr<std::string> token = cp_.Token(ns_, "operator");
  ASSERT_TRUE(token.ok()) << token.status();
  const std::string dir = testing::NewTempDir();
  testing::WriteFile(dir + "/token", *token);
  // Run 2 prints a token the server does not know.
  testing::WriteFile(dir + "/plugin", absl::StrCat(R"(#!/bin/sh
n=$(($(cat )",
                                                   dir, R"(/runs 2>/dev/null || echo 0) + 1))
echo $n >)",
                                                   dir, R"(/runs
token=$(cat )",
                                                   dir, R"(/token)
[ $n -eq 2 ] && token=not-a-token
expiry=$(date -u -d "+2 seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}' "$token" "$expiry"
)"));
  ASSERT_EQ(chmod((dir + "/plugin").c_str(), 0755), 0);
  RestConfig config = AdminConfig();
  config.endpoint.client_cert_pem.clear();
  config.endpoint.client_key_pem.clear();
  config.exec = ExecPlugin();
  config.exec->api_version = "client.authentication.k8s.io/v1beta1";
  config.exec->command = dir + "/plugin";
  config.exec->interactive = ExecPlugin::Interactive::kNever;
  std::shared_ptr<KubeClient> client = Client(config);  // run 1
  auto runs = [&] { return std::string(absl::StripAsciiWhitespace(*ReadFile(dir + "/runs"))); };

  ASSERT_TRUE(ListLeases(*client, ns_).ok());
  EXPECT_EQ(runs(), "1");  // still valid: not run again
  absl::SleepFor(absl::Milliseconds(2500));
  const absl::Status refused = ListLeases(*client, ns_).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnauthenticated) << refused;
  EXPECT_EQ(runs(), "2");  // expired: run again, and its token refused
  const absl::Status again = ListLeases(*client, ns_).status();
  EXPECT_TRUE(again.ok()) << again;
  EXPECT_EQ(runs(), "3");  // the refused credential was dropped at once
}

absl::Duration Percentile(std::vector<absl::Duration> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

TEST_F(KubeControlPlaneTest, GetAndUpdateLatency) {
  constexpr int kRequests = 200;
  KubeLeaseStore store = AdminStore("lock");
  LeaseRecord r = *store.Create(NewRecord("a"));
  std::vector<absl::Duration> gets, updates;
  for (int i = 0; i < kRequests; ++i) {
    absl::Time start = absl::Now();
    absl::StatusOr<LeaseRecord> got = store.Get();
    gets.push_back(absl::Now() - start);
    ASSERT_TRUE(got.ok()) << got.status();
    r = *got;
    r.renew_time = absl::Now();
    start = absl::Now();
    absl::StatusOr<LeaseRecord> updated = store.Update(r);
    updates.push_back(absl::Now() - start);
    ASSERT_TRUE(updated.ok()) << updated.status();
  }
  const std::string report = absl::StrFormat(
      "lease latency over %d requests, local kube-apiserver: get p50=%s p99=%s; update p50=%s "
      "p99=%s",
      kRequests, absl::FormatDuration(Percentile(gets, 0.5)),
      absl::FormatDuration(Percentile(gets, 0.99)), absl::FormatDuration(Percentile(updates, 0.5)),
      absl::FormatDuration(Percentile(updates, 0.99)));
  std::printf("%s\n", report.c_str());
  RecordProperty("latency", report);
  EXPECT_LT(Percentile(gets, 0.5), absl::Seconds(1));
}

}  // namespace
}  // namespace baton::kube

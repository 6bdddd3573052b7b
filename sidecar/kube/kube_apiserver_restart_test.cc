// The kube client across a kube-apiserver restart. Its own binary: the
// restart would fail whatever other test used the shared API server at the
// time, so CTest runs it alone (RUN_SERIAL).
//
// A restart is also the dependable way to make a resourceVersion Gone: the
// new server's watch cache starts at the current version and answers 410 for
// older ones, while a fresh server replays them from etcd until its first
// compaction (five minutes).
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/lease_json.h"
#include "sidecar/kube/lease_watcher.h"
#include "sidecar/kube/testing/controlplane_fixture.h"
#include "sidecar/kube/watch_stream.h"

namespace baton::kube {
namespace {

using testing::KubeControlPlaneTest;
using testing::NewRecord;
using testing::WatchLog;

// Watches Lease "lock" from resourceVersion `rv` until the first event;
// true if the server says the version is Gone as LeaseWatcher reads it:
// FailedPrecondition, from an HTTP 410 or from an ERROR event decoded by
// DecodeWatchEvent (on which the watcher reads the Lease again:
// lease_watcher_test).
bool WatchFromIsGone(KubeClient& client, const std::string& ns, const std::string& rv) {
  const std::string path = absl::StrCat(
      LeasesPath(ns), "?watch=1&fieldSelector=metadata.name%3Dlock&resourceVersion=", rv);
  std::string events;
  absl::Status first_event = absl::OkStatus();
  const absl::Status s = client.Watch(
      path, absl::Seconds(5), [] {},
      [&](absl::string_view data) {
        events.append(data.data(), data.size());
        const size_t end = events.find('\n');
        if (end == std::string::npos) return absl::OkStatus();
        first_event = DecodeWatchEvent(absl::string_view(events).substr(0, end)).status();
        return absl::CancelledError("first event seen");
      });
  std::printf("watch from resourceVersion %s: %s, first event %s %s\n", rv.c_str(),
              s.ToString().c_str(), first_event.ToString().c_str(), events.substr(0, 300).c_str());
  return absl::IsFailedPrecondition(s) || absl::IsFailedPrecondition(first_event);
}

TEST_F(KubeControlPlaneTest, StoreAndWatcherSurviveARestartAndRecoverFromGoneVersions) {
  KubeLeaseStore store = AdminStore("lock");
  LeaseRecord r = *store.Create(NewRecord("a"));
  const std::string before_restart = r.resource_version;

  WatchLog log;
  LeaseWatcherOptions options;
  options.min_backoff = absl::Milliseconds(100);
  options.max_backoff = absl::Seconds(1);
  LeaseWatcher watcher(
      *KubeClient::Create(AdminConfig()), ns_, "lock", SystemClock(),
      [&](const LeaseEvent& e) { log.Add(e.record); }, nullptr, options);
  watcher.Start();
  ASSERT_TRUE(log.WaitForHolder("a", absl::Seconds(10)));

  ASSERT_TRUE(cp_.RestartApiServer().ok());

  // The store's kept-alive connection died with the old process; the next
  // request dials again.
  r.holder_identity = "after-restart";
  absl::StatusOr<LeaseRecord> written = store.Update(r);
  for (const absl::Time until = absl::Now() + absl::Seconds(20);
       !written.ok() && absl::Now() < until; absl::SleepFor(absl::Milliseconds(200))) {
    written = store.Update(r);
  }
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(log.WaitForHolder("after-restart", absl::Seconds(30)))
      << ::testing::PrintToString(log.holders());

  // The version from before the restart is Gone now, in the form the
  // watcher acts on (the watch cache may take a moment to be ready after the
  // restart)...
  std::shared_ptr<KubeClient> raw = Client(AdminConfig());
  bool gone = WatchFromIsGone(*raw, ns_, before_restart);
  for (const absl::Time until = absl::Now() + absl::Seconds(30); !gone && absl::Now() < until;) {
    absl::SleepFor(absl::Seconds(1));
    gone = WatchFromIsGone(*raw, ns_, before_restart);
  }
  ASSERT_TRUE(gone);

  // ...and the watcher that lived through the restart follows on.
  Kubectl(
      {"patch", "lease", "lock", "--type=merge", "-p", R"({"spec":{"holderIdentity":"kubectl"}})"});
  EXPECT_TRUE(log.WaitForHolder("kubectl", absl::Seconds(10)));
  watcher.Stop();
}

}  // namespace
}  // namespace baton::kube

// Shared pieces of the kube client's tests against the real control plane
// (tests/support/controlplane.h): a fixture that works in its own namespace
// with admin and ServiceAccount clients, and a recorder for LeaseWatcher.
// Header-only; link baton_test_controlplane (baton_controlplane_test does).
#ifndef BATON_SIDECAR_KUBE_TESTING_CONTROLPLANE_FIXTURE_H_
#define BATON_SIDECAR_KUBE_TESTING_CONTROLPLANE_FIXTURE_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/kube_client.h"
#include "sidecar/kube/kube_lease_store.h"
#include "sidecar/kube/kubeconfig.h"
#include "tests/support/controlplane.h"

namespace baton::kube::testing {

using ::baton::testing::ControlPlane;

inline LeaseRecord NewRecord(const std::string& holder) {
  LeaseRecord r;
  r.holder_identity = holder;
  r.lease_duration_seconds = 15;
  r.acquire_time = r.renew_time = absl::Now();
  return r;
}

class KubeControlPlaneTest : public ::testing::Test {
 protected:
  KubeControlPlaneTest() : cp_(ControlPlane::Get()), ns_(cp_.UniqueNamespace("kube")) {}

  RestConfig AdminConfig() const {
    absl::StatusOr<RestConfig> c = LoadKubeconfig(cp_.AdminKubeconfig());
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }

  std::shared_ptr<KubeClient> Client(RestConfig config, KubeClientOptions options = {}) {
    absl::StatusOr<std::unique_ptr<KubeClient>> c =
        KubeClient::Create(std::move(config), std::move(options));
    EXPECT_TRUE(c.ok()) << c.status();
    return std::shared_ptr<KubeClient>(*std::move(c));
  }

  KubeLeaseStore AdminStore(const std::string& name) {
    return KubeLeaseStore(Client(AdminConfig()), ns_, name);
  }

  // kubectl as the admin, in this test's namespace; fails the test on error.
  std::string Kubectl(std::vector<std::string> args) {
    args.insert(args.end(), {"-n", ns_});
    absl::StatusOr<std::string> out = cp_.Kubectl(args);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or("");
  }

  // Creates a ServiceAccount bound to a Role with exactly `verbs` on leases.
  void GrantLeaseVerbs(const std::string& sa, const std::string& verbs) {
    Kubectl({"create", "serviceaccount", sa});
    Kubectl({"create", "role", sa, "--resource=leases.coordination.k8s.io", "--verb=" + verbs});
    Kubectl({"create", "rolebinding", sa, "--role=" + sa,
             absl::StrCat("--serviceaccount=", ns_, ":", sa)});
  }

  ControlPlane& cp_;
  const std::string ns_;
};

// Collects a watcher's records; waits for one that matches.
class WatchLog {
 public:
  void Add(const std::optional<LeaseRecord>& r) {
    absl::MutexLock lock(&mu_);
    holders_.push_back(r.has_value() ? r->holder_identity : "<absent>");
  }
  bool WaitForHolder(const std::string& holder, absl::Duration timeout) {
    auto seen = [&] {
      mu_.AssertHeld();
      return std::find(holders_.begin(), holders_.end(), holder) != holders_.end();
    };
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&seen), timeout);
  }
  std::vector<std::string> holders() {
    absl::MutexLock lock(&mu_);
    return holders_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> holders_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton::kube::testing

#endif  // BATON_SIDECAR_KUBE_TESTING_CONTROLPLANE_FIXTURE_H_

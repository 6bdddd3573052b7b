// `baton leases` against the real API server: Leases written by kubectl
// (fresh, stale, released) are listed, sorted and judged, and the
// sidecar's own ServiceAccount is refused with a hint.
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/clock.h"
#include "sidecar/kube/micro_time.h"
#include "sidecar/tools/leases_command.h"
#include "tests/support/controlplane.h"

namespace baton::tools {
namespace {

using ::baton::testing::ControlPlane;
using ::testing::HasSubstr;

std::string LeaseYaml(const std::string& ns, const std::string& name, const std::string& holder,
                      int duration_seconds, int transitions, absl::Time renewed) {
  const std::string t = kube::FormatMicroTime(renewed);
  return absl::StrFormat(R"(apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: %s, namespace: %s}
spec:
  holderIdentity: "%s"
  leaseDurationSeconds: %d
  leaseTransitions: %d
  acquireTime: "%s"
  renewTime: "%s"
---
)",
                         name, ns, holder, duration_seconds, transitions, t, t);
}

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome RunWith(const LeasesOptions& options) {
  std::ostringstream out, err;
  const int code = RunLeases(options, *SystemClock(), out, err);
  return {code, out.str(), err.str()};
}

class LeasesControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = cp_.UniqueNamespace("leases");
    const absl::Time now = absl::Now();
    // fresh: renewed now with an hour's promise, so the verdict cannot
    // flip while the test runs; stale: an hour past its 15 s; released:
    // what a sidecar writes on SIGTERM.
    const std::string yaml = LeaseYaml(ns_, "stale", "web-1_fghjk", 15, 2, now - absl::Hours(1)) +
                             LeaseYaml(ns_, "fresh", "web-0_abcde", 3600, 3, now) +
                             LeaseYaml(ns_, "released", "", 1, 5, now - absl::Minutes(1));
    absl::StatusOr<std::string> applied = cp_.Kubectl({"apply", "--server-side", "-f", "-"}, yaml);
    ASSERT_TRUE(applied.ok()) << applied.status();
  }

  LeasesOptions Admin() const {
    LeasesOptions o;
    o.kubeconfig = cp_.AdminKubeconfig();
    o.namespace_name = ns_;
    return o;
  }

  ControlPlane& cp_ = ControlPlane::Get();
  std::string ns_;
};

TEST_F(LeasesControlPlaneTest, ListsSortedLinesJudgingFreshLiveAndStaleExpired) {
  Outcome run = RunWith(Admin());
  EXPECT_EQ(run.code, kLeasesOk) << run.err;
  EXPECT_EQ(run.out,
            "fresh holder=web-0_abcde transitions=3 duration=3600s LIVE\n"
            "released holder=\"\" transitions=5 duration=1s EXPIRED\n"
            "stale holder=web-1_fghjk transitions=2 duration=15s EXPIRED\n");
  EXPECT_EQ(run.err, "");
}

TEST_F(LeasesControlPlaneTest, AllNamespacesPrefixesTheNamespace) {
  LeasesOptions o = Admin();
  o.namespace_name.clear();
  o.all_namespaces = true;
  Outcome run = RunWith(o);
  EXPECT_EQ(run.code, kLeasesOk) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(absl::StrCat(ns_,
                                     "/fresh holder=web-0_abcde transitions=3 duration=3600s "
                                     "LIVE\n",
                                     ns_, "/released ")));
}

TEST_F(LeasesControlPlaneTest, JsonCarriesTheLeaseFields) {
  LeasesOptions o = Admin();
  o.output = LeasesOutput::kJson;
  Outcome run = RunWith(o);
  ASSERT_EQ(run.code, kLeasesOk) << run.err;
  const boost::json::value doc = boost::json::parse(run.out);
  const boost::json::array& items = doc.at("leases").as_array();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].at("name").as_string(), "fresh");
  EXPECT_EQ(items[0].at("namespace").as_string(), ns_);
  EXPECT_EQ(items[0].at("state").as_string(), "LIVE");
  EXPECT_EQ(items[2].at("name").as_string(), "stale");
  EXPECT_EQ(items[2].at("state").as_string(), "EXPIRED");
  EXPECT_EQ(items[2].at("leaseTransitions").as_int64(), 2);
}

TEST_F(LeasesControlPlaneTest, EmptyNamespaceIsNotAnError) {
  LeasesOptions o = Admin();
  o.namespace_name = cp_.UniqueNamespace("leases-empty");
  Outcome run = RunWith(o);
  EXPECT_EQ(run.code, kLeasesOk) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("no Leases in namespace"));
}

TEST_F(LeasesControlPlaneTest, SidecarServiceAccountWithoutListIsRefusedWithAHint) {
  // The sidecar's Role (deploy/base): get, create, update, watch — no list.
  const std::string role = absl::StrFormat(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: baton, namespace: %1$s}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: baton, namespace: %1$s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: baton}
subjects:
- {kind: ServiceAccount, name: baton, namespace: %1$s}
)",
                                           ns_);
  absl::StatusOr<std::string> applied = cp_.Kubectl({"apply", "-f", "-"}, role);
  ASSERT_TRUE(applied.ok()) << applied.status();
  absl::StatusOr<std::string> kubeconfig = cp_.TokenKubeconfig(ns_, "baton");
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  LeasesOptions o = Admin();
  o.kubeconfig = *kubeconfig;
  Outcome run = RunWith(o);
  EXPECT_EQ(run.code, kLeasesFailed);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("403"));
  EXPECT_THAT(run.err, HasSubstr("needs the `list` verb"));
}

TEST_F(LeasesControlPlaneTest, WatchWithoutTheWatchVerbListsThenStopsWithAHint) {
  // An operator allowed to list Leases but not to watch them.
  const std::string role = absl::StrFormat(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lister, namespace: %1$s}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lister, namespace: %1$s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lister}
subjects:
- {kind: ServiceAccount, name: lister, namespace: %1$s}
)",
                                           ns_);
  absl::StatusOr<std::string> applied = cp_.Kubectl({"apply", "-f", "-"}, role);
  ASSERT_TRUE(applied.ok()) << applied.status();
  absl::StatusOr<std::string> kubeconfig = cp_.TokenKubeconfig(ns_, "lister");
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  LeasesOptions o = Admin();
  o.kubeconfig = *kubeconfig;
  o.watch = true;
  Outcome run = RunWith(o);
  EXPECT_EQ(run.code, kLeasesFailed);
  EXPECT_THAT(run.out, HasSubstr("fresh holder=web-0_abcde transitions=3"));  // the listing first
  EXPECT_THAT(run.err, HasSubstr("403"));
  EXPECT_THAT(run.err, HasSubstr("for --watch `watch`"));
}

}  // namespace
}  // namespace baton::tools

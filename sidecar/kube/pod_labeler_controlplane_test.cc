// PodLabeler against a real kube-apiserver: the label and its annotation on
// real Pod objects (no kubelet runs them; a Pending Pod takes patches all the
// same), the sweep of a previous leader's label, and a Role without the verbs.
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/kubeconfig.h"
#include "sidecar/kube/pod_labeler.h"
#include "sidecar/kube/testing/controlplane_fixture.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace baton::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::KubeControlPlaneTest;

constexpr char kKey[] = "baton.dev/leader";

int CountOf(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class PodLabelerTest : public KubeControlPlaneTest {
 protected:
  std::string Lease() const { return absl::StrCat(ns_, "/app"); }

  // A Pod that no kubelet will run, labelled for `leader_of` if not empty.
  void CreatePod(const std::string& name, const std::string& leader_of = "") {
    std::string metadata = absl::StrCat("{name: ", name, ", labels: {app: demo}}");
    if (!leader_of.empty()) {
      metadata = absl::StrCat("{name: ", name, R"(, labels: {app: demo, ")", kKey,
                              R"(": "true"}, annotations: {")", kLeaderOfAnnotation, R"(": ")",
                              leader_of, R"("}})");
    }
    absl::StatusOr<std::string> out =
        cp_.Kubectl({"apply", "-n", ns_, "-f", "-"},
                    absl::StrCat("{apiVersion: v1, kind: Pod, metadata: ", metadata,
                                 ", spec: {containers: [{name: app, image: app}]}}"));
    ASSERT_TRUE(out.ok()) << out.status();
  }

  // The Pods that carry the label now, by name.
  std::vector<std::string> Labelled() {
    const std::string out = Kubectl({"get", "pods", "-l", absl::StrCat(kKey, "=true"), "-o",
                                     "jsonpath={.items[*].metadata.name}"});
    return absl::StrSplit(out, ' ', absl::SkipEmpty());
  }

  std::string AnnotationOf(const std::string& pod) {
    return Kubectl(
        {"get", "pod", pod, "-o", "jsonpath={.metadata.annotations.baton\\.dev/leader-of}"});
  }

  // Waits (at most 10s) until exactly `want` carry the label.
  void AwaitLabelled(const std::vector<std::string>& want) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (Labelled() != want && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
    EXPECT_EQ(Labelled(), want);
  }

  // A ServiceAccount with exactly `verbs` on pods.
  RestConfig PodsConfig(const std::string& sa, const std::string& verbs) {
    Kubectl({"create", "serviceaccount", sa});
    Kubectl({"create", "role", sa, "--resource=pods", "--verb=" + verbs});
    Kubectl({"create", "rolebinding", sa, "--role=" + sa,
             absl::StrCat("--serviceaccount=", ns_, ":", sa)});
    absl::StatusOr<std::string> kubeconfig = cp_.TokenKubeconfig(ns_, sa);
    EXPECT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    absl::StatusOr<RestConfig> config = LoadKubeconfig(kubeconfig.value_or(""));
    EXPECT_TRUE(config.ok()) << config.status();
    return config.value_or(RestConfig{});
  }

  std::unique_ptr<PodLabeler> Labeler(RestConfig config, const std::string& pod,
                                      absl::Duration resync = absl::Seconds(15)) {
    absl::StatusOr<std::unique_ptr<KubeClient>> client = KubeClient::Create(std::move(config));
    EXPECT_TRUE(client.ok()) << client.status();
    PodLabelerOptions options;
    options.pod_namespace = ns_;
    options.pod_name = pod;
    options.label_key = kKey;
    options.lease = Lease();
    options.resync = resync;
    options.retry = absl::Milliseconds(100);
    return std::make_unique<PodLabeler>(*std::move(client), std::move(options), SystemClock());
  }
};

TEST_F(PodLabelerTest, StartingTakesOffWhatAnEarlierRunLeft) {
  CreatePod("a", Lease());
  std::unique_ptr<PodLabeler> labeler = Labeler(AdminConfig(), "a");
  labeler->Start();
  AwaitLabelled({});
  EXPECT_EQ(AnnotationOf("a"), "");
  EXPECT_EQ(Kubectl({"get", "pod", "a", "-o", "jsonpath={.metadata.labels.app}"}), "demo")
      << "the patch touches the leader label alone";
}

TEST_F(PodLabelerTest, TheLeaderSweepsThePreviousLeadersLabelThenLabelsItsOwnPod) {
  CreatePod("new");
  CreatePod("old", Lease());                                 // a killed leader's
  CreatePod("other-workload", absl::StrCat(ns_, "/other"));  // another Lease's leader
  CreatePod("hand-made");
  Kubectl({"label", "pod", "hand-made", absl::StrCat(kKey, "=true")});  // no annotation

  std::unique_ptr<PodLabeler> labeler = Labeler(AdminConfig(), "new");
  labeler->Start();
  labeler->SetLeading(true);
  AwaitLabelled({"hand-made", "new", "other-workload"});
  EXPECT_EQ(AnnotationOf("new"), Lease());
  EXPECT_EQ(AnnotationOf("old"), "");
  EXPECT_EQ(AnnotationOf("other-workload"), absl::StrCat(ns_, "/other"));

  labeler->SetLeading(false);
  AwaitLabelled({"hand-made", "other-workload"});
  EXPECT_EQ(AnnotationOf("new"), "");
}

TEST_F(PodLabelerTest, WhileLeadingAStrayLabelIsSweptWithinAResync) {
  CreatePod("leader");
  CreatePod("follower");
  std::unique_ptr<PodLabeler> labeler = Labeler(AdminConfig(), "leader", absl::Milliseconds(300));
  labeler->Start();
  labeler->SetLeading(true);
  AwaitLabelled({"leader"});

  // A late write of the follower's, as if delayed in the network.
  Kubectl({"annotate", "pod", "follower", absl::StrCat(kLeaderOfAnnotation, "=", Lease())});
  Kubectl({"label", "pod", "follower", absl::StrCat(kKey, "=true")});
  // An operator's edit of the leader's own.
  Kubectl({"label", "pod", "leader", absl::StrCat(kKey, "-")});
  const absl::Time edited = absl::Now();
  AwaitLabelled({"leader"});
  EXPECT_LT(absl::Now() - edited, absl::Seconds(2));
}

TEST_F(PodLabelerTest, StopWaitsUntilTheLabelIsOff) {
  CreatePod("a");
  std::unique_ptr<PodLabeler> labeler = Labeler(AdminConfig(), "a");
  labeler->Start();
  labeler->SetLeading(true);
  AwaitLabelled({"a"});
  labeler->SetLeading(false);
  labeler->Stop(SystemClock()->Monotonic() + absl::Seconds(5));
  EXPECT_THAT(Labelled(), IsEmpty());
}

TEST_F(PodLabelerTest, WithoutListItLabelsItsOwnPodAndSaysOnceThatItCannotSweep) {
  CreatePod("new");
  CreatePod("old", Lease());
  std::ostringstream log;
  const std::shared_ptr<spdlog::logger> before = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  {
    std::unique_ptr<PodLabeler> labeler =
        Labeler(PodsConfig("patch-only", "patch"), "new", absl::Milliseconds(100));
    labeler->Start();
    labeler->SetLeading(true);
    AwaitLabelled({"new", "old"});
    absl::SleepFor(absl::Seconds(1));  // ten resyncs
  }
  spdlog::set_default_logger(before);
  const std::string lines = log.str();
  EXPECT_EQ(CountOf(lines, "event=leader_label_sweep_forbidden"), 1) << lines;
  EXPECT_EQ(CountOf(lines, "event=leader_label_failed"), 0) << lines;
  EXPECT_EQ(CountOf(lines, "event=leader_label_added"), 1) << lines;
}

TEST_F(PodLabelerTest, WithoutPatchNothingChangesAndStopDoesNotWaitForIt) {
  CreatePod("a", Lease());
  std::unique_ptr<PodLabeler> labeler = Labeler(PodsConfig("list-only", "list"), "a");
  labeler->Start();
  labeler->SetLeading(true);
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_THAT(Labelled(), ElementsAre("a")) << "as it was";
  const MonoTime start = SystemClock()->Monotonic();
  labeler->Stop(start + absl::Seconds(5));
  EXPECT_LT(SystemClock()->Monotonic() - start, absl::Seconds(1))
      << "a 403 is not worth waiting for";
}

TEST_F(PodLabelerTest, APodNameThatNamesNoPodChangesNothing) {
  CreatePod("real", Lease());
  std::unique_ptr<PodLabeler> labeler = Labeler(AdminConfig(), "typo");
  labeler->Start();
  labeler->SetLeading(true);
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_THAT(Labelled(), IsEmpty()) << "the sweep ran; the label of a missing Pod failed";
}

}  // namespace
}  // namespace baton::kube

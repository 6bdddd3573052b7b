#include "sidecar/kube/pod_status.h"

#include "boost/json/parse.hpp"
#include "gtest/gtest.h"

namespace baton::kube {
namespace {

// A Pod with a native sidecar (init container `baton`) and two application
// containers, `app` in `app_state` and `helper` terminated.
boost::json::value Pod(const char* app_state) {
  return boost::json::parse(std::string(R"({"kind":"Pod","spec":{
      "initContainers":[{"name":"baton","restartPolicy":"Always"}],
      "containers":[{"name":"app"},{"name":"helper"}]},
    "status":{
      "initContainerStatuses":[{"name":"baton","state":{"running":{}}}],
      "containerStatuses":[{"name":"helper","state":{"terminated":{"exitCode":0}}},
                           {"name":"app","state":)") +
                            app_state + "}]}}");
}

TEST(PodStatusTest, ExitedOnlyWhenEveryApplicationContainerHasTerminated) {
  EXPECT_TRUE(AppContainersExited(Pod(R"({"terminated":{"exitCode":137}})")).ok());
  const absl::Status running = AppContainersExited(Pod(R"({"running":{}})"));
  EXPECT_TRUE(absl::IsFailedPrecondition(running));
  EXPECT_EQ(running.message(), "container app has not terminated");
  EXPECT_TRUE(absl::IsFailedPrecondition(AppContainersExited(Pod(R"({"waiting":{}})"))));
}

TEST(PodStatusTest, AContainerWithoutAStatusHasNotExited) {
  EXPECT_TRUE(absl::IsFailedPrecondition(AppContainersExited(
      boost::json::parse(R"({"spec":{"containers":[{"name":"app"}]},"status":{}})"))));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      AppContainersExited(boost::json::parse(R"({"spec":{"containers":[{"name":"app"}]}})"))));
}

TEST(PodStatusTest, SomethingElseIsRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(AppContainersExited(boost::json::parse("[]"))));
  EXPECT_TRUE(absl::IsInvalidArgument(
      AppContainersExited(boost::json::parse(R"({"spec":{"containers":[]}})"))));
  EXPECT_TRUE(absl::IsInvalidArgument(
      AppContainersExited(boost::json::parse(R"({"spec":{"containers":[{"image":"x"}]}})"))));
}

}  // namespace
}  // namespace baton::kube

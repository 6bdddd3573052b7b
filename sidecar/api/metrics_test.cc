#include "sidecar/api/metrics.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/api/testing/api_test_env.h"

namespace baton {
namespace {

using testing::ApiTestEnv;
using ::testing::HasSubstr;
using testing::Leading;
using ::testing::Not;

TEST(MetricsTest, MasterStatusFollowsTheSnapshotAtScrapeTime) {
  ApiTestEnv env;
  EXPECT_THAT(env.metrics.Render(),
              HasSubstr("leader_election_master_status{name=\"my-lease\"} 0\n"));
  env.publisher.Publish(Leading(env.clock, 5, absl::Seconds(10)));
  EXPECT_THAT(env.metrics.Render(),
              HasSubstr("leader_election_master_status{name=\"my-lease\"} 1\n"));
  EXPECT_THAT(env.metrics.Render(), HasSubstr("baton_fencing_token{name=\"my-lease\"} 5\n"));
  // No new snapshot: the guarantee simply runs out.
  env.clock.Advance(absl::Seconds(10));
  EXPECT_THAT(env.metrics.Render(),
              HasSubstr("leader_election_master_status{name=\"my-lease\"} 0\n"));
}

TEST(MetricsTest, EveryFamilyHasHelpAndType) {
  ApiTestEnv env;
  const std::string text = env.metrics.Render();
  for (const char* family : {"leader_election_master_status",
                             "leader_election_slowpath_total",
                             "baton_fencing_token",
                             "baton_leader_valid_for_seconds",
                             "baton_promises_outstanding_seconds",
                             "baton_lease_observed",
                             "baton_build_info",
                             "baton_leadership_transitions_total",
                             "baton_acknowledgements_total",
                             "process_cpu_seconds_total",
                             "process_resident_memory_bytes",
                             "process_virtual_memory_bytes",
                             "process_start_time_seconds",
                             "process_open_fds",
                             "process_max_fds",
                             "baton_kube_api_requests_total",
                             "baton_kube_api_request_duration_seconds",
                             "baton_renew_duration_seconds",
                             "baton_renews_total",
                             "baton_http_requests_total",
                             "baton_http_connections",
                             "baton_grpc_requests_total",
                             "baton_grpc_watchers"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# HELP ") + family + " ")) << family;
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + " ")) << family;
  }
}

TEST(MetricsTest, SeriesWithKnownLabelsExistAtZeroFromTheStart) {
  ApiTestEnv env;
  const std::string text = env.metrics.Render();
  for (const char* series : {
           "leader_election_slowpath_total{name=\"my-lease\"} 0\n",
           "baton_renews_total{result=\"failure\"} 0\n",
           "baton_renews_total{result=\"success\"} 0\n",
           "baton_leadership_transitions_total{direction=\"acquired\"} 0\n",
           "baton_leadership_transitions_total{direction=\"lost\"} 0\n",
           "baton_acknowledgements_total{result=\"accepted\"} 0\n",
           "baton_acknowledgements_total{result=\"stale\"} 0\n",
           "baton_renew_duration_seconds_bucket{le=\"+Inf\"} 0\n",
           "baton_renew_duration_seconds_count 0\n",
           "baton_kube_api_request_duration_seconds_count{verb=\"update\"} 0\n",
           "baton_kube_api_request_duration_seconds_count{verb=\"watch\"} 0\n",
           "baton_promises_outstanding_seconds{name=\"my-lease\"} 0\n",
       }) {
    EXPECT_THAT(text, HasSubstr(series)) << series;
  }
}

TEST(MetricsTest, SlowPathsAndAcknowledgementsAreCounted) {
  ApiTestEnv env;
  env.metrics.ObserveSlowPath();
  env.metrics.ObserveAcknowledgement(true);
  env.metrics.ObserveAcknowledgement(false);
  env.metrics.ObserveAcknowledgement(false);
  const std::string text = env.metrics.Render();
  EXPECT_THAT(text, HasSubstr("leader_election_slowpath_total{name=\"my-lease\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("baton_acknowledgements_total{result=\"accepted\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("baton_acknowledgements_total{result=\"stale\"} 2\n"));
}

TEST(MetricsTest, OutstandingPromisesLastUntilAcknowledgedOrLapsed) {
  ApiTestEnv env;
  env.publisher.Publish(Leading(env.clock, 5, absl::Seconds(10)));
  env.publisher.Promise("app", env.clock.Monotonic());
  env.clock.Advance(absl::Seconds(4));
  EXPECT_THAT(env.metrics.Render(),
              HasSubstr("baton_promises_outstanding_seconds{name=\"my-lease\"} 6\n"));
  env.publisher.Acknowledge({"app", 5, std::nullopt}, env.clock.Monotonic());
  EXPECT_THAT(env.metrics.Render(),
              HasSubstr("baton_promises_outstanding_seconds{name=\"my-lease\"} 0\n"));
}

TEST(MetricsTest, ProcessMetricsDescribeThisProcess) {
  ApiTestEnv env;
  const std::string text = env.metrics.Render();
  EXPECT_THAT(text, ::testing::ContainsRegex("\nprocess_resident_memory_bytes [1-9][0-9]+\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\nprocess_open_fds [1-9][0-9]*\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("\nprocess_max_fds [1-9][0-9]*\n"));
}

TEST(MetricsTest, CountersByLabel) {
  ApiTestEnv env;
  env.metrics.ObserveApiRequest("update", 200, absl::Milliseconds(3));
  env.metrics.ObserveApiRequest("update", 200, absl::Milliseconds(4));
  env.metrics.ObserveApiRequest("update", 409, absl::Milliseconds(4));
  env.metrics.ObserveApiRequest("get", 0, absl::Seconds(10));
  env.metrics.ObserveLeadershipAcquired();
  env.metrics.ObserveLeadershipLost();
  env.metrics.ObserveLeadershipAcquired();
  const std::string text = env.metrics.Render();
  EXPECT_THAT(text, HasSubstr("baton_kube_api_requests_total{verb=\"update\",code=\"200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("baton_kube_api_requests_total{verb=\"update\",code=\"409\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("baton_kube_api_requests_total{verb=\"get\",code=\"error\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("baton_leadership_transitions_total{direction=\"acquired\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("baton_leadership_transitions_total{direction=\"lost\"} 1\n"));
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  ApiTestEnv env;
  env.metrics.ObserveRenew(absl::Milliseconds(3), true);
  env.metrics.ObserveRenew(absl::Milliseconds(30), true);
  env.metrics.ObserveRenew(absl::Seconds(20), false);
  const std::string text = env.metrics.Render();
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_bucket{le=\"0.001\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_bucket{le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_bucket{le=\"0.05\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_bucket{le=\"10\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_count 3\n"));
  EXPECT_THAT(text, HasSubstr("baton_renew_duration_seconds_sum 20.033"));
  EXPECT_THAT(text, HasSubstr("baton_renews_total{result=\"success\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("baton_renews_total{result=\"failure\"} 1\n"));
}

TEST(MetricsTest, GaugesMoveBothWays) {
  ApiTestEnv env;
  env.metrics.AddWatchers(3);
  env.metrics.AddWatchers(-1);
  env.metrics.AddHttpConnections(2);
  const std::string text = env.metrics.Render();
  EXPECT_THAT(text, HasSubstr("baton_grpc_watchers 2\n"));
  EXPECT_THAT(text, HasSubstr("baton_http_connections 2\n"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  ApiTestEnv env;
  Leadership l = testing::Unobserved();
  l.lease_name = "a\"b\\c\nd";
  env.publisher.Publish(l);
  EXPECT_THAT(env.metrics.Render(),
              HasSubstr("leader_election_master_status{name=\"a\\\"b\\\\c\\nd\"} 0\n"));
}

TEST(MetricsTest, EveryLineIsACommentOrASample) {
  ApiTestEnv env;
  env.metrics.ObserveHttpRequest("/leader", 200);
  env.metrics.ObserveGrpcRequest("GetLeadership", 0);
  const std::string text = env.metrics.Render();
  ASSERT_TRUE(absl::EndsWith(text, "\n"));
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# HELP ") || absl::StartsWith(line, "# TYPE ")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    ASSERT_EQ(parts.size(), 2u) << line;
    EXPECT_THAT(parts[1], Not(HasSubstr(" "))) << line;
  }
}

}  // namespace
}  // namespace baton

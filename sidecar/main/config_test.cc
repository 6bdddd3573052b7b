#include "sidecar/main/config.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

ConfigInputs ValidInputs() {
  ConfigInputs in;
  in.lease_name = "app";
  in.pod_namespace = "prod";
  in.http_addr = "127.0.0.1:4040";
  in.grpc_addr = "127.0.0.1:4041";
  in.hostname = "node-a";
  in.random_suffix = "x7k2q";
  return in;
}

struct TimingCase {
  const char* name;
  ElectionTiming timing;
  const char* error;  // nullptr: valid
};

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const TimingCase& c, std::ostream* os) { *os << c.name; }

class TimingTest : public ::testing::TestWithParam<TimingCase> {};

TEST_P(TimingTest, ValidatesPerDesign) {
  const TimingCase& c = GetParam();
  absl::Status s = ValidateTiming(c.timing);
  if (c.error == nullptr) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.error));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Durations, TimingTest,
    ::testing::Values(
        TimingCase{"Defaults", {}, nullptr},
        TimingCase{"Short",
                   {absl::Seconds(3), absl::Milliseconds(1500), absl::Milliseconds(250)},
                   nullptr},
        // client-go may time a follower's wait from a renew up to one second
        // older than the last (renewTime at one-second resolution), so a
        // renew deadline inside that second of the lease is unsafe.
        TimingCase{"RenewWithinResolutionOfLease",
                   {absl::Seconds(2), absl::Milliseconds(1500), absl::Milliseconds(250)},
                   "--renew-deadline must be at most"},
        TimingCase{"RenewLeavesNoRoomForDrift",
                   {absl::Seconds(15), absl::Milliseconds(13900), absl::Seconds(2)},
                   "clocks that may run 1 % apart"},
        TimingCase{"RenewEqualsLease",
                   {absl::Seconds(10), absl::Seconds(10), absl::Seconds(2)},
                   "--renew-deadline must be at most"},
        TimingCase{"RenewAboveLease",
                   {absl::Seconds(10), absl::Seconds(12), absl::Seconds(2)},
                   "--renew-deadline must be at most"},
        TimingCase{"RetryWithJitterReachesDeadline",
                   {absl::Seconds(15), absl::Seconds(6), absl::Seconds(5)},
                   "--retry-period × 1.2"},
        TimingCase{"ZeroRetry",
                   {absl::Seconds(15), absl::Seconds(10), absl::ZeroDuration()},
                   "must all be positive"},
        TimingCase{"NegativeLease",
                   {absl::Seconds(-1), absl::Seconds(10), absl::Seconds(2)},
                   "must all be positive"},
        TimingCase{"FractionalLease",
                   {absl::Milliseconds(2500), absl::Seconds(2), absl::Milliseconds(250)},
                   "whole number of seconds"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ConfigTest, NamespaceFromFlagThenEnvThenClientConfig) {
  ConfigInputs in = ValidInputs();
  in.client_namespace = "from-file\n";
  in.lease_namespace = "from-flag";
  EXPECT_EQ(ConfigFrom(in)->lease_namespace, "from-flag");
  in.lease_namespace = "";
  EXPECT_EQ(ConfigFrom(in)->lease_namespace, "prod");
  in.pod_namespace = "";
  EXPECT_EQ(ConfigFrom(in)->lease_namespace, "from-file");
}

TEST(ConfigTest, MissingNamespaceIsAnError) {
  ConfigInputs in = ValidInputs();
  in.pod_namespace = "";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--lease-namespace"));
}

TEST(ConfigTest, LeaseNameIsRequired) {
  ConfigInputs in = ValidInputs();
  in.lease_name = "";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--lease-name"));
}

TEST(ConfigTest, DefaultIdentityIsPodNameOrHostnamePlusSuffix) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->identity, "node-a_x7k2q");
  in.pod_name = "app-0";
  EXPECT_EQ(ConfigFrom(in)->identity, "app-0_x7k2q");
  in.identity = "exactly-this";
  EXPECT_EQ(ConfigFrom(in)->identity, "exactly-this");
}

TEST(ConfigTest, BadAddressNamesTheFlag) {
  ConfigInputs in = ValidInputs();
  in.grpc_addr = "localhost";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--grpc-addr=localhost"));
  in.grpc_addr = "127.0.0.1:70000";
  EXPECT_FALSE(ConfigFrom(in).ok());
  // A host name the servers cannot bind is refused here, with the flag.
  in.grpc_addr = "127.0.0.1:4041";
  in.http_addr = "foo:4040";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()),
              HasSubstr("--http-addr=foo:4040: the host must be"));
}

TEST(ConfigTest, ApiTimeoutDefaultsToAtMostHalfTheRenewDeadline) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->api_timeout, absl::Seconds(5));
  in.timing = {absl::Seconds(3), absl::Milliseconds(1500), absl::Milliseconds(250)};
  EXPECT_EQ(ConfigFrom(in)->api_timeout, absl::Milliseconds(750));
  in.api_timeout = absl::Seconds(2);
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--api-timeout=2s"));
}

TEST(ConfigTest, ShutdownGraceDefaultsToTheRenewDeadlinePlusASecond) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->shutdown_grace, in.timing.renew_deadline + absl::Seconds(1));
  EXPECT_THAT(ConfigWarnings(*ConfigFrom(in)), IsEmpty());
  in.timing = {absl::Seconds(3), absl::Milliseconds(1500), absl::Milliseconds(250)};
  EXPECT_EQ(ConfigFrom(in)->shutdown_grace, absl::Milliseconds(2500));
  in.shutdown_grace = absl::Seconds(1500) / 1000;
  const std::vector<std::string> warnings = ConfigWarnings(*ConfigFrom(in));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("--shutdown-grace=1.5s is not above --renew-deadline=1.5s"));
  in.shutdown_grace = -absl::Seconds(1);
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--shutdown-grace"));
}

TEST(ConfigTest, AnUnnamedReadersPromiseMustEndWithinTheShutdownGrace) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->max_unnamed_valid_for, absl::Milliseconds(500));
  in.max_unnamed_valid_for = absl::Microseconds(500);
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()),
              HasSubstr("--max-unnamed-valid-for=500us must be at least 1ms"));
  in.max_unnamed_valid_for = absl::Seconds(5);
  in.shutdown_grace = absl::Seconds(5);
  const absl::Status refused = ConfigFrom(in).status();
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("--max-unnamed-valid-for=5s must be shorter than --shutdown-grace=5s"));
  in.shutdown_grace = absl::ZeroDuration();  // the default, the renew deadline + 1s
  EXPECT_TRUE(ConfigFrom(in).ok());
}

TEST(ConfigTest, NativeSidecarNeedsItsPod) {
  ConfigInputs in = ValidInputs();
  in.native_sidecar = true;
  in.pod_name.clear();
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()),
              HasSubstr("--native-sidecar needs the Pod to read: set POD_NAME"));
  in.pod_name = "web-0";
  in.pod_namespace = "shop";
  EXPECT_TRUE(ConfigFrom(in)->native_sidecar);
  EXPECT_EQ(ConfigFrom(in)->pod_name, "web-0");
}

TEST(ConfigTest, MetricsAddressIsOptionalButChecked) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->metrics_addr, "");
  in.metrics_addr = "0.0.0.0:9090";
  EXPECT_EQ(ConfigFrom(in)->metrics_addr, "0.0.0.0:9090");
  in.metrics_addr = "9090";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--metrics-addr"));
}

TEST(ConfigTest, LogFormatAndLevel) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->log.format, LogFormat::kLogfmt);
  EXPECT_EQ(ConfigFrom(in)->log.level, spdlog::level::info);
  in.log_format = "json";
  in.log_level = "debug";
  EXPECT_EQ(ConfigFrom(in)->log.format, LogFormat::kJson);
  EXPECT_EQ(ConfigFrom(in)->log.level, spdlog::level::debug);
  in.log_format = "text";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--log-format=text"));
  in.log_format = "json";
  in.log_level = "verbose";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--log-level=verbose"));
}

TEST(ConfigTest, SseHeartbeatDefaultsTo15sAndHasTheWatchMinimum) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->sse_heartbeat, absl::Seconds(15));
  in.sse_heartbeat = absl::Milliseconds(100);
  EXPECT_EQ(ConfigFrom(in)->sse_heartbeat, absl::Milliseconds(100));
  in.sse_heartbeat = absl::Milliseconds(50);
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("--sse-heartbeat=50ms"));
}

TEST(ConfigTest, LeaderLabelIsOffByDefaultAndNeedsAValidKeyAndThePod) {
  ConfigInputs in = ValidInputs();
  EXPECT_EQ(ConfigFrom(in)->leader_label, "");
  in.leader_label = "baton.dev/leader";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()), HasSubstr("POD_NAME"));
  in.pod_name = "app-0";
  absl::StatusOr<SidecarConfig> c = ConfigFrom(in);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->leader_label, "baton.dev/leader");
  EXPECT_EQ(c->pod_name, "app-0");
  EXPECT_EQ(c->pod_namespace, "prod");
  // Outside a Pod the kubeconfig context's namespace; the Lease's may differ.
  in.pod_namespace = "";
  in.lease_namespace = "leases";
  in.client_namespace = "apps\n";
  EXPECT_EQ(ConfigFrom(in)->pod_namespace, "apps");
  in.leader_label = "Baton.dev/leader";
  EXPECT_THAT(std::string(ConfigFrom(in).status().message()),
              HasSubstr("--leader-label=\"Baton.dev/leader\" is not a label key"));
}

}  // namespace
}  // namespace baton

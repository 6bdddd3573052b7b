#include "sidecar/tools/leases_command.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"

namespace baton::tools {
namespace {

using ::testing::HasSubstr;

constexpr absl::Time kNow = absl::FromUnixSeconds(1'790'000'000);  // 2026-09-21T14:13:20Z

// A Lease held by `holder`, last renewed `ago` before kNow.
kube::NamedLease Held(std::string ns, std::string name, std::string holder, absl::Duration ago,
                      int duration_seconds = 15, int transitions = 0) {
  kube::NamedLease lease{std::move(ns), std::move(name), {}};
  lease.record.holder_identity = std::move(holder);
  lease.record.lease_duration_seconds = duration_seconds;
  lease.record.lease_transitions = transitions;
  lease.record.acquire_time = kNow - ago - absl::Minutes(5);
  lease.record.renew_time = kNow - ago;
  return lease;
}

LeasesOptions Text() { return LeasesOptions{}; }
LeasesOptions AllNamespaces() {
  LeasesOptions o;
  o.all_namespaces = true;
  return o;
}
LeasesOptions Wide() {
  LeasesOptions o;
  o.output = LeasesOutput::kWide;
  return o;
}
LeasesOptions Json() {
  LeasesOptions o;
  o.output = LeasesOutput::kJson;
  return o;
}

TEST(LeasesFormatTest, OneSortedLinePerLease) {
  std::vector<kube::NamedLease> leases = {
      Held("ns", "zeta", "z-1_abcde", absl::Seconds(1), 15, 7),
      Held("ns", "alpha", "a-0_fghjk", absl::Seconds(20), 10, 2),
  };
  EXPECT_EQ(FormatLeases(Text(), std::move(leases), kNow),
            "alpha holder=a-0_fghjk transitions=2 duration=10s EXPIRED\n"
            "zeta holder=z-1_abcde transitions=7 duration=15s LIVE\n");
}

TEST(LeasesFormatTest, AllNamespacesPrefixesAndSortsByNamespaceFirst) {
  std::vector<kube::NamedLease> leases = {
      Held("b-ns", "a", "x", absl::Seconds(1)),
      Held("a-ns", "z", "y", absl::Seconds(1)),
      Held("a-ns", "b", "w", absl::Seconds(1)),
  };
  EXPECT_EQ(FormatLeases(AllNamespaces(), std::move(leases), kNow),
            "a-ns/b holder=w transitions=0 duration=15s LIVE\n"
            "a-ns/z holder=y transitions=0 duration=15s LIVE\n"
            "b-ns/a holder=x transitions=0 duration=15s LIVE\n");
}

TEST(LeasesFormatTest, ReleasedLeaseShowsQuotedEmptyHolderAndExpired) {
  // What baton writes on release: holder "", duration 1s, renewTime now.
  kube::NamedLease released = Held("ns", "app", "", absl::ZeroDuration(), 1, 4);
  EXPECT_EQ(FormatLeases(Text(), {released}, kNow),
            "app holder=\"\" transitions=4 duration=1s EXPIRED\n");
}

TEST(LeasesFormatTest, HolderWithSpacesIsQuoted) {
  EXPECT_EQ(FormatLeases(Text(), {Held("ns", "app", "my holder", absl::Seconds(1))}, kNow),
            "app holder=\"my holder\" transitions=0 duration=15s LIVE\n");
}

TEST(LeasesFormatTest, WideAddsAcquireTimeRenewAgeAndValidityEstimate) {
  kube::NamedLease live = Held("ns", "app", "a", absl::Milliseconds(1500), 15, 3);
  kube::NamedLease stale = Held("ns", "old", "b", absl::Seconds(40), 15, 1);
  kube::NamedLease never = Held("ns", "new", "", absl::ZeroDuration(), 15, 0);
  never.record.acquire_time.reset();
  never.record.renew_time.reset();
  EXPECT_EQ(FormatLeases(Wide(), {live, stale, never}, kNow),
            "app holder=a transitions=3 duration=15s LIVE acquired=2026-09-21T14:08:18.500000Z "
            "renew_age=1.5s valid_for=13.5s\n"
            "new holder=\"\" transitions=0 duration=15s EXPIRED acquired=- renew_age=- "
            "valid_for=0s\n"
            "old holder=b transitions=1 duration=15s EXPIRED acquired=2026-09-21T14:07:40.000000Z "
            "renew_age=40s valid_for=0s\n");
}

kube::LeaseChange Change(kube::LeaseChange::Type type, kube::NamedLease lease) {
  return {type, std::move(lease)};
}

TEST(LeasesWatchTest, AHandoverOrEditIsNoteworthyARenewalIsNot) {
  const kube::NamedLease before = Held("ns", "app", "a", absl::Seconds(2), 15, 3);
  kube::NamedLease renewed = before;
  renewed.record.renew_time = kNow;
  renewed.record.resource_version = "99";
  kube::NamedLease handed_over = renewed;
  handed_over.record.holder_identity = "b";
  handed_over.record.lease_transitions = 4;
  handed_over.record.acquire_time = kNow;
  kube::NamedLease released = renewed;
  released.record.holder_identity = "";
  released.record.lease_duration_seconds = 1;
  using Type = kube::LeaseChange::Type;
  EXPECT_FALSE(IsNoteworthy(&before.record, Change(Type::kModified, renewed)));
  EXPECT_TRUE(IsNoteworthy(&before.record, Change(Type::kModified, handed_over)));
  EXPECT_TRUE(IsNoteworthy(&before.record, Change(Type::kModified, released)));
  EXPECT_TRUE(IsNoteworthy(nullptr, Change(Type::kAdded, before)));
  EXPECT_TRUE(IsNoteworthy(&before.record, Change(Type::kDeleted, {"ns", "app", {}})));
}

TEST(LeasesWatchTest, ChangeLinesAreListingLinesOrDeletedOrJsonObjects) {
  using Type = kube::LeaseChange::Type;
  const kube::NamedLease lease = Held("ns", "app", "b", absl::Seconds(1), 15, 4);
  EXPECT_EQ(FormatLeaseChange(Text(), Change(Type::kModified, lease), kNow),
            "app holder=b transitions=4 duration=15s LIVE\n");
  EXPECT_EQ(FormatLeaseChange(AllNamespaces(), Change(Type::kDeleted, {"ns", "app", {}}), kNow),
            "ns/app DELETED\n");
  const std::string line = FormatLeaseChange(Json(), Change(Type::kModified, lease), kNow);
  ASSERT_EQ(line.find('\n'), line.size() - 1);
  const boost::json::value doc = boost::json::parse(line);
  EXPECT_EQ(doc.at("type"), "MODIFIED");
  EXPECT_EQ(doc.at("lease").at("holderIdentity"), "b");
  EXPECT_EQ(doc.at("lease").at("leaseTransitions"), 4);
  const boost::json::value gone = boost::json::parse(
      FormatLeaseChange(Json(), Change(Type::kDeleted, {"ns", "app", {}}), kNow));
  EXPECT_EQ(gone.at("type"), "DELETED");
  EXPECT_EQ(gone.at("lease").as_object().size(), 2u);
}

TEST(LeasesFormatTest, NoLeasesIsEmptyText) { EXPECT_EQ(FormatLeases(Text(), {}, kNow), ""); }

TEST(LeaseStateTest, LiveUntilRenewTimePlusDurationThenExpired) {
  kube::NamedLease lease = Held("ns", "app", "h", absl::ZeroDuration(), 15);
  EXPECT_EQ(EstimateLeaseState(lease.record, kNow), LeaseState::kLive);
  EXPECT_EQ(EstimateLeaseState(lease.record, kNow + absl::Seconds(15) - absl::Microseconds(1)),
            LeaseState::kLive);
  EXPECT_EQ(EstimateLeaseState(lease.record, kNow + absl::Seconds(15)), LeaseState::kExpired);
}

TEST(LeaseStateTest, NeverRenewedIsExpired) {
  kube::NamedLease lease = Held("ns", "app", "h", absl::ZeroDuration());
  lease.record.renew_time.reset();
  EXPECT_EQ(EstimateLeaseState(lease.record, kNow), LeaseState::kExpired);
}

TEST(LeaseStateTest, NoHolderIsExpiredEvenWhenJustRenewed) {
  kube::NamedLease lease = Held("ns", "app", "", absl::ZeroDuration(), 15);
  EXPECT_EQ(EstimateLeaseState(lease.record, kNow), LeaseState::kExpired);
}

TEST(LeaseStateTest, ZeroDurationExpiresAtRenewTime) {
  kube::NamedLease lease = Held("ns", "app", "h", absl::ZeroDuration(), 0);
  EXPECT_EQ(EstimateLeaseState(lease.record, kNow), LeaseState::kExpired);
}

TEST(LeasesFormatTest, JsonHasEveryFieldAndTheNamespaceAlways) {
  kube::NamedLease fresh = Held("ns", "fresh", "web-1_x7k2p", absl::Seconds(2), 15, 3);
  kube::NamedLease never = Held("ns", "bare", "h", absl::ZeroDuration());
  never.record.acquire_time.reset();
  never.record.renew_time.reset();
  const std::string out = FormatLeases(Json(), {fresh, never}, kNow);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  const boost::json::value doc = boost::json::parse(out);
  EXPECT_EQ(doc.at("now").as_string(), "2026-09-21T14:13:20.000000Z");
  const boost::json::array& items = doc.at("leases").as_array();
  ASSERT_EQ(items.size(), 2u);
  // Sorted: "bare" before "fresh".
  const boost::json::object& bare = items[0].as_object();
  EXPECT_EQ(bare.at("name").as_string(), "bare");
  EXPECT_TRUE(bare.at("renewTime").is_null());
  EXPECT_TRUE(bare.at("acquireTime").is_null());
  EXPECT_TRUE(bare.at("expiresAt").is_null());
  EXPECT_EQ(bare.at("state").as_string(), "EXPIRED");
  const boost::json::object& f = items[1].as_object();
  EXPECT_EQ(f.at("namespace").as_string(), "ns");
  EXPECT_EQ(f.at("name").as_string(), "fresh");
  EXPECT_EQ(f.at("holderIdentity").as_string(), "web-1_x7k2p");
  EXPECT_EQ(f.at("leaseTransitions").as_int64(), 3);
  EXPECT_EQ(f.at("leaseDurationSeconds").as_int64(), 15);
  EXPECT_EQ(f.at("acquireTime").as_string(), "2026-09-21T14:08:18.000000Z");
  EXPECT_EQ(f.at("renewTime").as_string(), "2026-09-21T14:13:18.000000Z");
  EXPECT_EQ(f.at("expiresAt").as_string(), "2026-09-21T14:13:33.000000Z");
  EXPECT_EQ(f.at("state").as_string(), "LIVE");
}

TEST(LeasesFormatTest, HolderControlCharactersAreEscapedSoEachLeaseIsOneLine) {
  const std::string out =
      FormatLeases(Text(), {Held("ns", "a", "evil\nb holder=me\r", absl::Seconds(1))}, kNow);
  EXPECT_EQ(out, "a holder=\"evil\\nb holder=me\\r\" transitions=0 duration=15s LIVE\n");
}

TEST(LeasesFormatTest, ExpiryBeyondYear9999IsHeldAtTheLastMicroTime) {
  kube::NamedLease far = Held("ns", "far", "x", absl::ZeroDuration(), 2'000'000'000);
  far.record.renew_time = absl::FromCivil(absl::CivilSecond(9999, 12, 31), absl::UTCTimeZone());
  const boost::json::value doc = boost::json::parse(FormatLeases(Json(), {far}, kNow));
  EXPECT_EQ(doc.at("leases").at(0).at("expiresAt").as_string(), "9999-12-31T23:59:59.999999Z");
}

TEST(LeasesFormatTest, JsonWithNoLeasesIsAnEmptyList) {
  const boost::json::value doc = boost::json::parse(FormatLeases(Json(), {}, kNow));
  EXPECT_TRUE(doc.at("leases").as_array().empty());
}

TEST(LeasesOptionsTest, OutputIsTextWideOrJson) {
  EXPECT_EQ(ParseLeasesOutput("text").value(), LeasesOutput::kText);
  EXPECT_EQ(ParseLeasesOutput("wide").value(), LeasesOutput::kWide);
  EXPECT_EQ(ParseLeasesOutput("json").value(), LeasesOutput::kJson);
  absl::StatusOr<LeasesOutput> yaml = ParseLeasesOutput("yaml");
  EXPECT_EQ(yaml.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(yaml.status().message(), HasSubstr("--output"));
}

TEST(LeasesOptionsTest, NamespaceAndAllNamespacesExcludeEachOther) {
  LeasesOptions o = AllNamespaces();
  EXPECT_TRUE(ValidateLeasesOptions(o).ok());
  o.namespace_name = "ns";
  absl::Status s = ValidateLeasesOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--namespace"));
  EXPECT_THAT(s.message(), HasSubstr("--all-namespaces"));
}

TEST(RunLeasesTest, ContradictoryFlagsExitTwoWithoutDialling) {
  LeasesOptions o = AllNamespaces();
  o.namespace_name = "ns";
  FakeClock clock;
  std::ostringstream out, err;
  EXPECT_EQ(RunLeases(o, clock, out, err), kLeasesBadUsage);
  EXPECT_EQ(out.str(), "");
  EXPECT_THAT(err.str(), HasSubstr("--all-namespaces"));
}

TEST(RunLeasesTest, UnreadableKubeconfigExitsOneNamingIt) {
  LeasesOptions o;
  o.kubeconfig = "/nonexistent/baton-test.kubeconfig";
  FakeClock clock;
  std::ostringstream out, err;
  EXPECT_EQ(RunLeases(o, clock, out, err), kLeasesFailed);
  EXPECT_EQ(out.str(), "");
  EXPECT_THAT(err.str(), HasSubstr("/nonexistent/baton-test.kubeconfig"));
}

TEST(LeasesHelpTest, SaysTheVerdictIsAWallClockEstimateAndWhyTheSidecarDiffers) {
  const std::string help = kLeasesHelp;
  EXPECT_THAT(help, HasSubstr("wall-clock ESTIMATE"));
  EXPECT_THAT(help, HasSubstr("monotonic clock"));
  EXPECT_THAT(help, HasSubstr("--all-namespaces"));
  EXPECT_THAT(help, HasSubstr("--output=text|wide|json"));
  EXPECT_THAT(help, HasSubstr("$KUBECONFIG"));
  EXPECT_THAT(help, HasSubstr("--context=NAME"));
  EXPECT_THAT(help, HasSubstr("--watch"));
}

TEST(RunLeasesTest, KubeconfigComesFromTheEnvironmentListThenHome) {
  // Neither exists: the command names where it looked (and, outside a Pod,
  // that there is no in-cluster config either).
  LeasesOptions o;
  o.kubeconfig_env = "/nonexistent/a:/nonexistent/b";
  o.home = "/nonexistent/home";
  FakeClock clock;
  std::ostringstream out, err;
  EXPECT_EQ(RunLeases(o, clock, out, err), kLeasesFailed);
  EXPECT_THAT(err.str(), HasSubstr("looked for /nonexistent/a, /nonexistent/b"));
  o.kubeconfig_env = "";
  o.context = "prod";
  err.str("");
  EXPECT_EQ(RunLeases(o, clock, out, err), kLeasesFailed);
  EXPECT_THAT(err.str(),
              HasSubstr("--context=prod needs a kubeconfig, and there is none (looked for "
                        "/nonexistent/home/.kube/config)"));
}

}  // namespace
}  // namespace baton::tools

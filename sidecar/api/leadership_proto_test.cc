#include "sidecar/api/leadership_proto.h"

#include <cstdint>
#include <optional>
#include <string>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"
#include "sidecar/api/testing/api_test_env.h"
#include "sidecar/common/fake_clock.h"

namespace baton {
namespace {

using testing::Following;
using testing::Leading;
using testing::Unobserved;

// `snapshot` as a reader asking at `at` is told it (a LeaderAnswer comes
// only from a publisher).
void ToProto(const Leadership& snapshot, MonoTime at, v1::Leadership* out) {
  LeadershipPublisher publisher(snapshot);
  LeadershipToProto(publisher.Promise("", at), at, out);
}

boost::json::object JsonOf(const Leadership& l, const Clock& clock) {
  v1::Leadership message;
  ToProto(l, clock.Monotonic(), &message);
  return boost::json::parse(ToJson(message)).as_object();
}

TEST(LeadershipProtoTest, LeaderHasEveryField) {
  FakeClock clock;
  v1::Leadership m;
  ToProto(Leading(clock, 7, absl::Seconds(9)), clock.Monotonic(), &m);
  EXPECT_TRUE(m.is_leader());
  EXPECT_EQ(m.identity(), testing::kSelf);
  EXPECT_EQ(m.holder_identity(), testing::kSelf);
  EXPECT_EQ(m.fencing_token(), 7);
  EXPECT_EQ(m.lease_name(), "my-lease");
  EXPECT_EQ(m.lease_namespace(), "apps");
  EXPECT_EQ(m.lease_uid(), "uid-1");
  EXPECT_EQ(m.valid_for().seconds(), 9);
  EXPECT_EQ(m.lease_duration().seconds(), 15);
  EXPECT_EQ(m.acquire_time().seconds(), absl::ToUnixSeconds(clock.Wall() - absl::Seconds(30)));
  EXPECT_EQ(m.renew_time().seconds(), absl::ToUnixSeconds(clock.Wall() - absl::Seconds(1)));
  EXPECT_TRUE(m.observed());
  EXPECT_FALSE(m.stepping_down());
}

TEST(LeadershipProtoTest, FencingRevisionIsWholeInTheDecimalFieldAndInTheInt64WhereItFits) {
  const std::string max128 = "340282366920938463463374607431768211455";
  struct Case {
    std::optional<ResourceVersion> revision;
    int64_t int64;
    std::string decimal;
  };
  for (const Case& c :
       {Case{ResourceVersion::Parse("4711"), 4711, "4711"},
        Case{ResourceVersion::Parse(max128), 0, max128}, Case{std::nullopt, 0, "0"}}) {
    FakeClock clock;
    Leadership l = Leading(clock, 7);
    l.fencing_revision = c.revision;
    v1::Leadership m;
    ToProto(l, clock.Monotonic(), &m);
    EXPECT_EQ(m.fencing_revision(), c.int64) << c.decimal;
    EXPECT_EQ(m.fencing_revision_decimal(), c.decimal);
  }
}

TEST(LeadershipProtoTest, ValidUntilBoottimeIsTheAbsoluteDeadlineWhileLeader) {
  FakeClock clock;
  const Leadership snapshot = Leading(clock, 3, absl::Seconds(10));
  const absl::Duration deadline = snapshot.leader_until.SinceOrigin();
  v1::Leadership m;
  ToProto(snapshot, clock.Monotonic(), &m);
  EXPECT_EQ(google::protobuf::util::TimeUtil::DurationToNanoseconds(m.valid_until_boottime()),
            absl::ToInt64Nanoseconds(deadline));
  // Evaluated later (a cached answer): valid_for shrinks, the deadline does not move.
  ToProto(snapshot, clock.Monotonic() + absl::Seconds(4), &m);
  EXPECT_EQ(m.valid_for().seconds(), 6);
  EXPECT_EQ(google::protobuf::util::TimeUtil::DurationToNanoseconds(m.valid_until_boottime()),
            absl::ToInt64Nanoseconds(deadline));
  // Not leader at the evaluation instant: zero.
  ToProto(snapshot, snapshot.leader_until, &m);
  EXPECT_FALSE(m.is_leader());
  EXPECT_EQ(google::protobuf::util::TimeUtil::DurationToNanoseconds(m.valid_until_boottime()), 0);
}

TEST(LeadershipProtoTest, IsLeaderAndValidForAreEvaluatedWhenConverted) {
  FakeClock clock;
  const Leadership snapshot = Leading(clock, 3, absl::Seconds(10));
  v1::Leadership m;
  clock.Advance(absl::Seconds(4));
  ToProto(snapshot, clock.Monotonic(), &m);
  EXPECT_TRUE(m.is_leader());
  EXPECT_EQ(m.valid_for().seconds(), 6);
  clock.Advance(absl::Seconds(6));
  ToProto(snapshot, clock.Monotonic(), &m);
  EXPECT_FALSE(m.is_leader());
  EXPECT_EQ(m.valid_for().seconds(), 0);
  EXPECT_EQ(m.fencing_token(), 3);
}

TEST(LeadershipProtoTest, SteppingDownIsNotLeader) {
  FakeClock clock;
  Leadership l = Leading(clock, 3);
  l.stepping_down = true;
  v1::Leadership m;
  ToProto(l, clock.Monotonic(), &m);
  EXPECT_FALSE(m.is_leader());
  EXPECT_TRUE(m.stepping_down());
}

TEST(LeadershipProtoTest, JsonUsesCamelCaseNamesAndNumericToken) {
  FakeClock clock;
  const boost::json::object json = JsonOf(Leading(clock, 42), clock);
  for (const char* field :
       {"isLeader", "identity", "holderIdentity", "fencingToken", "leaseName", "leaseNamespace",
        "leaseUid", "acquireTime", "renewTime", "validFor", "leaseDuration", "observed",
        "steppingDown", "fencingRevision", "validUntilBoottime"}) {
    EXPECT_TRUE(json.contains(field)) << field;
  }
  ASSERT_TRUE(json.at("fencingToken").is_int64()) << "fencing token must be a JSON number";
  EXPECT_EQ(json.at("fencingToken").as_int64(), 42);
  EXPECT_EQ(json.at("isLeader"), true);
  EXPECT_EQ(json.at("validFor"), "10s");
  EXPECT_EQ(json.at("leaseDuration"), "15s");
  // proto3 JSON prints an int64 as a string; the deadline is seconds since boot.
  EXPECT_EQ(json.at("fencingRevision"), "0");
  EXPECT_EQ(json.at("validUntilBoottime"), "3610s");  // FakeClock starts 1h after its origin
}

TEST(LeadershipProtoTest, JsonPrintsFalseAndZeroFields) {
  FakeClock clock;
  const boost::json::object json = JsonOf(Unobserved(), clock);
  EXPECT_EQ(json.at("isLeader"), false);
  EXPECT_EQ(json.at("observed"), false);
  EXPECT_EQ(json.at("holderIdentity"), "");
  ASSERT_TRUE(json.at("fencingToken").is_int64());
  EXPECT_EQ(json.at("fencingToken").as_int64(), 0);
  EXPECT_EQ(json.at("validFor"), "0s");
  EXPECT_EQ(json.at("validUntilBoottime"), "0s");
  EXPECT_EQ(json.at("fencingRevision"), "0");
  // Unknown times are absent rather than the epoch.
  EXPECT_FALSE(json.contains("acquireTime"));
  EXPECT_FALSE(json.contains("renewTime"));
  EXPECT_FALSE(json.contains("leaseDuration"));
}

TEST(LeadershipProtoTest, FollowerReportsHolderAndToken) {
  FakeClock clock;
  const boost::json::object json = JsonOf(Following(clock, testing::kOther, 9), clock);
  EXPECT_EQ(json.at("isLeader"), false);
  EXPECT_EQ(json.at("holderIdentity"), testing::kOther);
  EXPECT_EQ(json.at("fencingToken").as_int64(), 9);
}

TEST(LeadershipProtoTest, TimestampsAreRfc3339Utc) {
  FakeClock clock;
  Leadership l = Following(clock, testing::kOther, 1);
  l.acquire_time = absl::FromUnixMicros(1'790'000'000'123'456);
  const boost::json::object json = JsonOf(l, clock);
  EXPECT_EQ(json.at("acquireTime"), "2026-09-21T14:13:20.123456Z");
}

}  // namespace
}  // namespace baton

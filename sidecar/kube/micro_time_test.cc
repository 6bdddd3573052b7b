#include "sidecar/kube/micro_time.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::kube {
namespace {

using ::testing::HasSubstr;

absl::Time At(int64_t unix_seconds, int64_t nanos) {
  return absl::FromUnixSeconds(unix_seconds) + absl::Nanoseconds(nanos);
}

TEST(MicroTimeTest, FormatsSixDigitsUtcZ) {
  // 2026-09-17T13:37:24Z
  EXPECT_EQ(FormatMicroTime(At(1789652244, 807518000)), "2026-09-17T13:37:24.807518Z");
  EXPECT_EQ(FormatMicroTime(At(1789652244, 0)), "2026-09-17T13:37:24.000000Z");
  EXPECT_EQ(FormatMicroTime(At(1789652244, 1000)), "2026-09-17T13:37:24.000001Z");
}

TEST(MicroTimeTest, FormatTruncatesBelowAMicrosecond) {
  EXPECT_EQ(FormatMicroTime(At(1789652244, 807518999)), "2026-09-17T13:37:24.807518Z");
  // Before the epoch truncation is still toward the past, as Go's Format.
  EXPECT_EQ(FormatMicroTime(At(-1, 999999999)), "1969-12-31T23:59:59.999999Z");
}

TEST(MicroTimeTest, FormatsFourDigitYears) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  EXPECT_EQ(FormatMicroTime(absl::FromCivil(absl::CivilSecond(1, 1, 1), utc)),
            "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatMicroTime(absl::FromCivil(absl::CivilSecond(999, 12, 31, 23, 59, 59), utc)),
            "0999-12-31T23:59:59.000000Z");
}

TEST(MicroTimeTest, TheRangeIsYearsZeroToNineThousandNineHundredNinetyNine) {
  EXPECT_EQ(FormatMicroTime(MicroTimeFirst()), "0000-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatMicroTime(MicroTimeLast()), "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(*ParseMicroTime("9999-12-31T23:59:59.999999999Z"),
            MicroTimeLast() + absl::Nanoseconds(999));
}

TEST(MicroTimeTest, ParsesWhatTheApiServerEmits) {
  EXPECT_EQ(*ParseMicroTime("2026-09-17T13:37:24.807518Z"), At(1789652244, 807518000));
}

TEST(MicroTimeTest, ParsesRfc3339Variants) {
  EXPECT_EQ(*ParseMicroTime("2026-09-17T13:37:24Z"), At(1789652244, 0));
  EXPECT_EQ(*ParseMicroTime("2026-09-17T13:37:24.8Z"), At(1789652244, 800000000));
  EXPECT_EQ(*ParseMicroTime("2026-09-17T13:37:24.123456789Z"), At(1789652244, 123456789));
  EXPECT_EQ(*ParseMicroTime("2026-09-17T15:37:24.807518+02:00"), At(1789652244, 807518000));
  EXPECT_EQ(*ParseMicroTime("2026-09-17T13:07:24-00:30"), At(1789652244, 0));
}

TEST(MicroTimeTest, RoundTrips) {
  for (const char* text : {"2026-09-17T13:37:24.807518Z", "0000-01-01T00:00:00.000000Z",
                           "0042-03-04T05:06:07.000008Z", "9999-12-31T23:59:59.999999Z"}) {
    absl::StatusOr<absl::Time> t = ParseMicroTime(text);
    ASSERT_TRUE(t.ok()) << text;
    EXPECT_EQ(FormatMicroTime(*t), text);
  }
}

TEST(MicroTimeTest, RejectsAnythingElse) {
  for (const char* bad : {
           "", "2026-09-17",
           "2026-09-17 13:37:24Z",             // space instead of T
           "2026-09-17t13:37:24Z",             // lower-case t
           "2026-09-17T13:37:24z",             // lower-case z
           "2026-09-17T13:37:24",              // no zone
           "2026-09-17T13:37:24.Z",            // empty fraction
           "2026-09-17T13:37:24.1234567891Z",  // ten digits
           "2026-02-30T13:37:24Z",             // no such day
           "2026-09-17T24:00:00Z",             // hour 24
           "2026-09-17T13:60:24Z",             // minute 60
           "2026-09-17T13:37:24+0200",         // offset without colon
           "2026-09-17T13:37:24+24:00",        // offset out of range
           "2026-09-17T13:37:24Z ",            // trailing space
           "+2026-09-17T13:37:24Z", "2026-9-17T13:37:24Z",
           "0000-01-01T00:00:00+00:01",  // year -1 in UTC
           "9999-12-31T23:59:59-00:01",  // year 10000 in UTC
       }) {
    absl::StatusOr<absl::Time> t = ParseMicroTime(bad);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MicroTimeTest, ErrorQuotesTheInput) {
  EXPECT_THAT(std::string(ParseMicroTime("yesterday").status().message()),
              HasSubstr("\"yesterday\""));
}

}  // namespace
}  // namespace baton::kube

#include "sidecar/election/lease_record.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

TEST(ResourceVersionTest, OrdersByLengthThenDigits) {
  auto rv = [](std::string_view s) { return *ResourceVersion::Parse(s); };
  EXPECT_LT(rv("9"), rv("10"));
  EXPECT_LT(rv("99"), rv("100"));
  EXPECT_LT(rv("123"), rv("124"));
  EXPECT_EQ(rv("124"), rv("124"));
  EXPECT_LT(rv("9223372036854775807"), rv("18446744073709551616"));
  EXPECT_LT(rv("18446744073709551616"), rv("18446744073709551617"));
  const std::string max128 = "340282366920938463463374607431768211455";
  EXPECT_LT(rv("18446744073709551617"), rv(max128));
}

TEST(ResourceVersionTest, OnlyDecimalsWithoutLeadingZerosOfAtMost128BitsHaveAnOrder) {
  EXPECT_TRUE(ResourceVersion::Parse("0").has_value());
  EXPECT_TRUE(ResourceVersion::Parse("340282366920938463463374607431768211455").has_value());
  for (std::string_view bad : {"", "01", "12a", "-1", "+1", " 1", "1.0"}) {
    EXPECT_FALSE(ResourceVersion::Parse(bad).has_value()) << bad;
  }
  // 2^128, and the largest 39 digits.
  EXPECT_FALSE(ResourceVersion::Parse("340282366920938463463374607431768211456").has_value());
  EXPECT_FALSE(ResourceVersion::Parse(std::string(39, '9')).has_value());
  EXPECT_FALSE(ResourceVersion::Parse(std::string(40, '1')).has_value());
}

TEST(ResourceVersionTest, DigitsAreTheResourceVersionAsWritten) {
  EXPECT_EQ(ResourceVersion::Parse("18446744073709551616")->digits(), "18446744073709551616");
}

TEST(ResourceVersionTest, AsInt64OnlyWhereItFits) {
  EXPECT_EQ(ResourceVersion::Parse("42")->AsInt64(), 42);
  EXPECT_EQ(ResourceVersion::Parse("9223372036854775807")->AsInt64(), INT64_MAX);
  EXPECT_EQ(ResourceVersion::Parse("9223372036854775808")->AsInt64(), std::nullopt);
}

}  // namespace
}  // namespace baton

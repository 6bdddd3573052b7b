#include "baton/client/fence.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace baton::client {
namespace {

TEST(FenceTest, AdmitsEqualAndHigherTokensAndRefusesLower) {
  Fence fence;
  EXPECT_FALSE(fence.Highest().has_value());
  EXPECT_TRUE(fence.Admit(3).ok());
  EXPECT_TRUE(fence.Admit(3).ok());
  EXPECT_TRUE(fence.Admit(5).ok());
  const absl::Status stale = fence.Admit(4);
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted) << stale;
  EXPECT_EQ(fence.Highest(), 5);
}

TEST(FenceTest, StartsFromAPersistedHighestToken) {
  Fence fence(9);
  EXPECT_EQ(fence.Admit(8).code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(fence.Admit(9).ok());
}

TEST(FenceTest, IsSafeForConcurrentWriters) {
  Fence fence;
  std::vector<std::thread> writers;
  writers.reserve(16);
  for (int32_t token = 0; token < 16; ++token) {
    writers.emplace_back([&fence, token] { fence.Admit(token).IgnoreError(); });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(fence.Highest(), 15);
}

TEST(FenceTest, ComparesRevisionsAsIntegersOf128Bits) {
  Fence fence;
  EXPECT_TRUE(fence.Admit(999).ok());
  EXPECT_TRUE(fence.Admit(int64_t{1} << 40).ok());
  EXPECT_TRUE(fence.Admit(absl::MakeUint128(1, 0)).ok());  // 2^64
  EXPECT_EQ(fence.Admit(absl::MakeUint128(0, ~uint64_t{0})).code(), absl::StatusCode::kAborted);
  // "Unknown" (0) is refused once a revision was admitted.
  EXPECT_EQ(fence.Admit(0).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(fence.Highest(), absl::MakeUint128(1, 0));
}

TEST(ParseRevisionTest, AcceptsDigitsUpTo128Bits) {
  EXPECT_EQ(ParseRevision("1099511627776").value_or(0), int64_t{1} << 40);
  EXPECT_EQ(ParseRevision("0").value_or(1), 0);
  EXPECT_EQ(ParseRevision("340282366920938463463374607431768211455").value_or(0),
            absl::Uint128Max());
  for (absl::string_view bad :
       {"", "-1", "+1", "x", "01", "340282366920938463463374607431768211456"}) {
    EXPECT_EQ(ParseRevision(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(FormatRevisionTest, WritesTheDecimalDigits) {
  EXPECT_EQ(FormatRevision(0), "0");
  EXPECT_EQ(FormatRevision(absl::Uint128Max()), "340282366920938463463374607431768211455");
}

TEST(ParseTokenTest, AcceptsDigitsOnly) {
  EXPECT_EQ(ParseToken("42").value_or(-1), 42);
  for (absl::string_view bad : {"", "-1", "+1", " 1", "x", "2147483648"}) {
    EXPECT_EQ(ParseToken(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace baton::client

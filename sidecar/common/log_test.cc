#include "sidecar/common/log.h"

#include "gtest/gtest.h"

namespace baton {
namespace {

TEST(LogValueTest, PlainValuesAreUnchanged) {
  EXPECT_EQ(LogValue("pod-a_x7k2p"), "pod-a_x7k2p");
  EXPECT_EQ(LogValue("a\\b"), "a\\b");
  EXPECT_EQ(LogValue("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(LogValueTest, EmptySpacesQuotesAndEqualsAreQuoted) {
  EXPECT_EQ(LogValue(""), "\"\"");
  EXPECT_EQ(LogValue("a b"), "\"a b\"");
  EXPECT_EQ(LogValue("k=v"), "\"k=v\"");
  EXPECT_EQ(LogValue("say \"hi\" \\o/"), "\"say \\\"hi\\\" \\\\o/\"");
}

TEST(LogValueTest, ControlCharactersAreEscapedSoTheLineStaysOneLine) {
  EXPECT_EQ(LogValue("a\nb"), "\"a\\nb\"");
  EXPECT_EQ(LogValue("a\rb\tc"), "\"a\\rb\\tc\"");
  EXPECT_EQ(LogValue(std::string("\x1b[2K\x7f\0", 6)), "\"\\x1b[2K\\x7f\\x00\"");
}

}  // namespace
}  // namespace baton

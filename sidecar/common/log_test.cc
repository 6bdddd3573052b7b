#include "sidecar/common/log.h"

#include <regex>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"

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

TEST(LogfmtToJsonTest, KeysInOrderAfterTsAndLevel) {
  EXPECT_EQ(LogfmtToJson("2026-09-17T13:37:24.807518Z", "info",
                         "event=acquired lease=ns/app token=7 next=\"renew every ~2s\""),
            R"({"ts":"2026-09-17T13:37:24.807518Z","level":"info","event":"acquired",)"
            R"("lease":"ns/app","token":"7","next":"renew every ~2s"})");
}

TEST(LogfmtToJsonTest, LogValueEscapesAreUndoneAndJsonEscapesApplied) {
  const std::string holder = "say \"hi\"\n\x1b[2K \\o/ caf\xc3\xa9";
  EXPECT_EQ(LogfmtToJson("t", "warning", "event=x holder=" + LogValue(holder) + " empty=\"\""),
            "{\"ts\":\"t\",\"level\":\"warning\",\"event\":\"x\","
            "\"holder\":\"say \\\"hi\\\"\\n\\u001b[2K \\\\o/ caf\xc3\xa9\",\"empty\":\"\"}");
}

TEST(LogfmtToJsonTest, AnythingElseBecomesMsg) {
  EXPECT_EQ(LogfmtToJson("t", "info", "not logfmt at all"),
            R"({"ts":"t","level":"info","msg":"not logfmt at all"})");
  EXPECT_EQ(LogfmtToJson("t", "info", "event=x broken=\"unterminated"),
            R"({"ts":"t","level":"info","msg":"event=x broken=\"unterminated"})");
}

TEST(LogOptionsTest, FormatAndLevelNames) {
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("logfmt"), LogFormat::kLogfmt);
  EXPECT_THAT(std::string(ParseLogFormat("yaml").status().message()),
              ::testing::HasSubstr("--log-format=yaml"));
  EXPECT_EQ(*ParseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(*ParseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("error"), spdlog::level::err);
  EXPECT_THAT(std::string(ParseLogLevel("loud").status().message()),
              ::testing::HasSubstr("--log-level=loud"));
}

// A logger with `format`'s formatter writing into `out`.
std::shared_ptr<spdlog::logger> LoggerInto(std::ostringstream& out, LogFormat format) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_formatter(MakeLogFormatter(format));
  return logger;
}

TEST(LogFormatterTest, LogfmtLinesArePrefixedWithTsAndLevel) {
  std::ostringstream out;
  LoggerInto(out, LogFormat::kLogfmt)->warn("event=renew_failed next=retry");
  EXPECT_TRUE(
      std::regex_match(out.str(), std::regex(R"(ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z )"
                                             R"(level=warning event=renew_failed next=retry\n)")))
      << out.str();
}

TEST(LogFormatterTest, JsonLinesAreOneObjectEach) {
  std::ostringstream out;
  LoggerInto(out, LogFormat::kJson)->info("event=acquired token={}", 3);
  EXPECT_TRUE(std::regex_match(out.str(),
                               std::regex(R"(\{"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",)"
                                          R"("level":"info","event":"acquired","token":"3"\}\n)")))
      << out.str();
}

}  // namespace
}  // namespace baton

#include "sidecar/main/command_line.h"

#include <map>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, lease_name, "", "The Lease.");
ABSL_FLAG(std::string, lease_namespace, "", "The Lease's namespace.");
ABSL_FLAG(absl::Duration, api_timeout, absl::Seconds(5), "Deadline of each request.");
ABSL_FLAG(bool, release_on_shutdown, true, "Release on SIGTERM.");

namespace baton {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// The test's flags, reset to their defaults for every test.
class CommandLineTest : public ::testing::Test {
 protected:
  CommandLineTest() {
    absl::SetFlag(&FLAGS_lease_name, "");
    absl::SetFlag(&FLAGS_lease_namespace, "");
    absl::SetFlag(&FLAGS_api_timeout, absl::Seconds(5));
    absl::SetFlag(&FLAGS_release_on_shutdown, true);
  }

  std::vector<absl::CommandLineFlag*> Flags() {
    std::vector<absl::CommandLineFlag*> flags;
    for (const char* name :
         {"lease_name", "lease_namespace", "api_timeout", "release_on_shutdown"}) {
      flags.push_back(absl::FindCommandLineFlag(name));
    }
    return flags;
  }

  absl::StatusOr<ParsedCommandLine> Parse(const std::vector<std::string>& args) {
    return ParseCommandLine(Flags(), args, Environment());
  }

  EnvironmentLookup Environment() {
    return [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
  }

  std::map<std::string, std::string> env_;
};

TEST_F(CommandLineTest, FlagsWithDashesOrUnderscoresAndSeparateValues) {
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"--lease-name=app", "--lease_namespace", "prod", "--api-timeout=2s"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_lease_name), "app");
  EXPECT_EQ(absl::GetFlag(FLAGS_lease_namespace), "prod");
  EXPECT_EQ(absl::GetFlag(FLAGS_api_timeout), absl::Seconds(2));
  EXPECT_THAT(parsed->positional, IsEmpty());
}

TEST_F(CommandLineTest, BoolFlagsTakeNoSeparateValue) {
  ASSERT_TRUE(Parse({"--norelease-on-shutdown"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_release_on_shutdown));
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--release-on-shutdown", "word"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_release_on_shutdown));
  EXPECT_THAT(parsed->positional, ElementsAre("word"));
  ASSERT_TRUE(Parse({"--release-on-shutdown=false"}).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_release_on_shutdown));
}

TEST_F(CommandLineTest, EverythingAfterDoubleDashIsPositional) {
  absl::StatusOr<ParsedCommandLine> parsed =
      Parse({"stray", "--lease-name=a", "--", "sleep", "--help", "--lease-name=b"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->positional, ElementsAre("stray", "sleep", "--help", "--lease-name=b"));
  EXPECT_EQ(parsed->after_double_dash, 1u);
  EXPECT_FALSE(parsed->help);
  EXPECT_EQ(absl::GetFlag(FLAGS_lease_name), "a");
}

TEST_F(CommandLineTest, HelpAndVersionAreRecognised) {
  EXPECT_TRUE(Parse({"--lease-name=x", "--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
}

TEST_F(CommandLineTest, UnknownFlagIsNamedWithDashes) {
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--no_such_flag=1"});
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("unknown flag --no-such-flag"));
}

TEST_F(CommandLineTest, MissingAndBadValuesNameTheFlag) {
  EXPECT_THAT(std::string(Parse({"--lease-name"}).status().message()),
              HasSubstr("--lease-name needs a value"));
  EXPECT_THAT(std::string(Parse({"--api-timeout=soon"}).status().message()),
              HasSubstr("--api-timeout=soon is not a valid value for --api-timeout"));
}

TEST_F(CommandLineTest, EnvironmentSetsFlagsAndTheCommandLineWins) {
  env_["BATON_LEASE_NAME"] = "from-env";
  env_["BATON_LEASE_NAMESPACE"] = "env-ns";
  env_["BATON_API_TIMEOUT"] = "";  // empty: unset
  absl::StatusOr<ParsedCommandLine> parsed = Parse({"--lease-namespace=flag-ns"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_lease_name), "from-env");
  EXPECT_EQ(absl::GetFlag(FLAGS_lease_namespace), "flag-ns");
  EXPECT_EQ(absl::GetFlag(FLAGS_api_timeout), absl::Seconds(5));
  EXPECT_THAT(parsed->from_environment,
              UnorderedElementsAre(Pair("--lease-name", "BATON_LEASE_NAME")));
}

TEST_F(CommandLineTest, BadEnvironmentValueNamesTheVariable) {
  env_["BATON_RELEASE_ON_SHUTDOWN"] = "perhaps";
  absl::StatusOr<ParsedCommandLine> parsed = Parse({});
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("BATON_RELEASE_ON_SHUTDOWN=perhaps is not a valid value"));
}

TEST_F(CommandLineTest, ConfigErrorsNameTheVariablesBehindTheirFlags) {
  env_["BATON_LEASE_NAME"] = "x";
  env_["BATON_API_TIMEOUT"] = "9s";
  absl::StatusOr<ParsedCommandLine> parsed = Parse({});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(NameEnvironmentSources("--api-timeout=9s must be short", *parsed, Environment()),
            "--api-timeout=9s must be short (--api-timeout is BATON_API_TIMEOUT=9s)");
  // --lease-name is not named by --lease-namespace.
  EXPECT_EQ(NameEnvironmentSources("--lease-namespace is required", *parsed, Environment()),
            "--lease-namespace is required");
}

TEST_F(CommandLineTest, HelpListsDashedFlagsWithVariablesAndDefaults) {
  const std::string help = FlagsHelp(Flags());
  EXPECT_THAT(help, HasSubstr("  --api-timeout=DURATION  (env BATON_API_TIMEOUT; default 5s)\n"
                              "      Deadline of each request.\n"));
  EXPECT_THAT(help, HasSubstr("  --lease-name=STRING  (env BATON_LEASE_NAME)\n"));
  EXPECT_THAT(help, HasSubstr("--release-on-shutdown[=true|false]"));
  EXPECT_THAT(help, Not(HasSubstr("--lease_name")));
  EXPECT_THAT(help, Not(HasSubstr(".cc")));
}

TEST(CommandLineNamesTest, VariableAndFlagSpelling) {
  EXPECT_EQ(EnvironmentVariable("lease_duration"), "BATON_LEASE_DURATION");
  EXPECT_EQ(DashedFlag("lease_duration"), "--lease-duration");
}

}  // namespace
}  // namespace baton

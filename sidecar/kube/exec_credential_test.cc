#include "sidecar/kube/exec_credential.h"

#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/kube/read_file.h"
#include "sidecar/kube/testing/test_files.h"

namespace baton::kube {
namespace {

using ::testing::HasSubstr;
using testing::NewTempDir;
using testing::WriteFile;

constexpr char kV1[] = "client.authentication.k8s.io/v1";
constexpr char kV1beta1[] = "client.authentication.k8s.io/v1beta1";

std::string Credential(const std::string& api_version, const std::string& status) {
  return absl::StrCat(R"({"apiVersion":")", api_version, R"(","kind":"ExecCredential","status":)",
                      status, "}");
}

TEST(ParseExecCredentialTest, TokenWithExpiry) {
  absl::StatusOr<ExecCredential> c = ParseExecCredential(
      Credential(kV1, R"({"token":"t0k","expirationTimestamp":"2026-12-01T12:00:00Z"})"), kV1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->token, "t0k");
  ASSERT_TRUE(c->expires.has_value());
  EXPECT_EQ(*c->expires,
            absl::FromCivil(absl::CivilSecond(2026, 12, 1, 12, 0, 0), absl::UTCTimeZone()));
}

TEST(ParseExecCredentialTest, ClientCertificateWithoutExpiry) {
  absl::StatusOr<ExecCredential> c = ParseExecCredential(
      Credential(kV1beta1, R"({"clientCertificateData":"CERT","clientKeyData":"KEY"})"), kV1beta1);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_FALSE(c->expires.has_value());
}

TEST(ParseExecCredentialTest, RefusesWhatClientGoRefuses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "is not a JSON object"},
      {Credential(kV1beta1, R"({"token":"t"})"), "has apiVersion \"" + std::string(kV1beta1)},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Secret","status":{}})",
       "is not of kind ExecCredential"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
       "has no status"},
      {Credential(kV1, "{}"), "has neither status.token nor status.clientCertificateData"},
      {Credential(kV1, R"({"clientCertificateData":"C"})"), "needs both"},
      {Credential(kV1, R"({"token":"t","expirationTimestamp":"tomorrow"})"),
       "expirationTimestamp that is not RFC 3339"},
  };
  for (const auto& [json, want] : cases) {
    const absl::Status s = ParseExecCredential(json, kV1).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(std::string(s.message()), HasSubstr(want)) << json;
    EXPECT_THAT(std::string(s.message()), ::testing::Not(HasSubstr("\"t\""))) << json;
  }
}

ExecPlugin Plugin(std::string command,
                  ExecPlugin::Interactive mode = ExecPlugin::Interactive::kNever) {
  ExecPlugin plugin;
  plugin.api_version = kV1;
  plugin.command = std::move(command);
  plugin.interactive = mode;
  return plugin;
}

RestConfig ConfigWith(ExecPlugin plugin) {
  RestConfig config;
  config.endpoint.host = "10.0.0.1";
  config.endpoint.port = "6443";
  config.endpoint.ca_pem = "CA PEM";
  config.endpoint.tls_server_name = "kubernetes";
  config.exec = std::move(plugin);
  return config;
}

TEST(ExecInfoTest, CarriesTheClusterOnlyWhenAskedTo) {
  ExecPlugin plugin = Plugin("x");
  RestConfig config = ConfigWith(plugin);
  boost::json::value bare = boost::json::parse(ExecInfo(plugin, config, false));
  EXPECT_EQ(bare.at("apiVersion"), kV1);
  EXPECT_EQ(bare.at("kind"), "ExecCredential");
  EXPECT_EQ(bare.at("spec").at("interactive"), false);
  EXPECT_FALSE(bare.at("spec").as_object().contains("cluster"));

  plugin.provide_cluster_info = true;
  boost::json::value full = boost::json::parse(ExecInfo(plugin, config, true));
  EXPECT_EQ(full.at("spec").at("interactive"), true);
  const boost::json::value& cluster = full.at("spec").at("cluster");
  EXPECT_EQ(cluster.at("server"), "https://10.0.0.1:6443");
  EXPECT_EQ(cluster.at("tls-server-name"), "kubernetes");
  EXPECT_EQ(cluster.at("certificate-authority-data"),
            boost::json::value(absl::Base64Escape("CA PEM")));
}

// RunExecPlugin with real scripts.
class RunExecPluginTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = NewTempDir(); }

  std::string Script(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    WriteFile(path, absl::StrCat("#!/bin/sh\n", body));
    chmod(path.c_str(), 0755);
    return path;
  }

  std::string dir_;
};

TEST_F(RunExecPluginTest, PassesArgsEnvAndExecInfoAndReturnsStdout) {
  const std::string info = dir_ + "/info.json";
  ExecPlugin plugin =
      Plugin(Script("plugin", absl::StrCat(R"(printf '%s' "$KUBERNETES_EXEC_INFO" > )", info, "\n",
                                           R"(printf '%s %s' "$1" "$MODE")")));
  plugin.args = {"first", "second"};
  plugin.env = {{"MODE", "set-by-kubeconfig"}};
  absl::StatusOr<std::string> out =
      RunExecPlugin(ConfigWith(plugin), absl::Seconds(10), *SystemClock());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "first set-by-kubeconfig");
  absl::StatusOr<std::string> seen = ReadFile(info);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, ExecInfo(plugin, ConfigWith(plugin), false));
}

TEST_F(RunExecPluginTest, FailuresNameTheCommand) {
  ExecPlugin missing = Plugin(dir_ + "/absent");
  missing.install_hint = "ask the platform team";
  const absl::Status not_found =
      RunExecPlugin(ConfigWith(missing), absl::Seconds(10), *SystemClock()).status();
  EXPECT_EQ(not_found.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(not_found.message()), HasSubstr(dir_ + "/absent\" cannot be run"));
  EXPECT_THAT(std::string(not_found.message()), HasSubstr("ask the platform team"));

  ExecPlugin failing = Plugin(Script("fail", "exit 3\n"));
  const absl::Status exited =
      RunExecPlugin(ConfigWith(failing), absl::Seconds(10), *SystemClock()).status();
  EXPECT_EQ(exited.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(exited.message()), HasSubstr("exited with code 3"));

  ExecPlugin slow = Plugin(Script("slow", "exec sleep 30\n"));
  const absl::Time start = absl::Now();
  const absl::Status timed_out =
      RunExecPlugin(ConfigWith(slow), absl::Milliseconds(200), *SystemClock()).status();
  EXPECT_EQ(timed_out.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  ExecPlugin always = Plugin(Script("tty", "exit 0\n"), ExecPlugin::Interactive::kAlways);
  if (isatty(STDIN_FILENO) != 1) {
    EXPECT_THAT(std::string(RunExecPlugin(ConfigWith(always), absl::Seconds(10), *SystemClock())
                                .status()
                                .message()),
                HasSubstr("needs a terminal"));
  }
}

// ExecCredentialSource over a counting fake plugin and a fake clock.
class ExecCredentialSourceTest : public ::testing::Test {
 protected:
  ExecCredentialSource::Options FakePlugin() {
    ExecCredentialSource::Options options;
    options.runner = [this](const RestConfig&) -> absl::StatusOr<std::string> {
      ++runs_;
      if (!next_error_.ok()) return next_error_;
      const std::string expiry =
          expires_in_ == absl::InfiniteDuration()
              ? ""
              : absl::StrCat(R"(,"expirationTimestamp":")",
                             absl::FormatTime(absl::RFC3339_sec, clock_.Wall() + expires_in_,
                                              absl::UTCTimeZone()),
                             "\"");
      return Credential(kV1, absl::StrCat(R"({"token":"token-)", runs_, "\"", expiry, "}"));
    };
    return options;
  }

  static RestConfig Config() { return ConfigWith(Plugin("fake")); }

  FakeClock clock_;
  int runs_ = 0;
  absl::Duration expires_in_ = absl::Minutes(10);
  absl::Status next_error_;
};

TEST_F(ExecCredentialSourceTest, RunsThePluginAgainOnlyOnceTheCredentialExpired) {
  ExecCredentialSource source(Config(), clock_, FakePlugin());
  EXPECT_EQ(source.Current()->token, "token-1");
  clock_.Advance(absl::Minutes(10) - absl::Seconds(1));
  EXPECT_EQ(source.Current()->token, "token-1");
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(source.Current()->token, "token-2");
  EXPECT_EQ(runs_, 2);
}

TEST_F(ExecCredentialSourceTest, WithoutExpiryTheCredentialIsKeptUntilInvalidated) {
  expires_in_ = absl::InfiniteDuration();
  ExecCredentialSource source(Config(), clock_, FakePlugin());
  EXPECT_EQ(source.Current()->token, "token-1");
  clock_.Advance(absl::Hours(24));
  EXPECT_EQ(source.Current()->token, "token-1");
  source.Invalidate();  // e.g. the API server answered 401
  EXPECT_EQ(source.Current()->token, "token-2");
}

TEST_F(ExecCredentialSourceTest, AnExpiredCredentialIsNotUsedWhenThePluginFails) {
  ExecCredentialSource source(Config(), clock_, FakePlugin());
  ASSERT_TRUE(source.Current().ok());
  clock_.Advance(absl::Minutes(11));
  next_error_ = absl::FailedPreconditionError("exec plugin \"fake\" exited with code 1");
  EXPECT_EQ(source.Current().status(), next_error_);
  next_error_ = absl::OkStatus();
  EXPECT_EQ(source.Current()->token, "token-3");
}

TEST_F(ExecCredentialSourceTest, AMalformedCredentialNamesThePlugin) {
  ExecCredentialSource::Options options;
  options.runner = [](const RestConfig&) -> absl::StatusOr<std::string> { return "{}"; };
  ExecCredentialSource source(Config(), clock_, options);
  const absl::Status s = source.Current().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("exec plugin \"fake\": the plugin's"));
}

}  // namespace
}  // namespace baton::kube

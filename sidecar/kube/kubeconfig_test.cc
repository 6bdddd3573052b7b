#include "sidecar/kube/kubeconfig.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/kube/rest_config.h"
#include "sidecar/kube/testing/test_files.h"

namespace baton::kube {
namespace {

using ::testing::HasSubstr;
using testing::NewTempDir;
using testing::WriteFile;

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr char kCert[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
constexpr char kKey[] = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewTempDir();
    WriteFile(dir_ + "/ca.crt", kCa);
    WriteFile(dir_ + "/client.crt", kCert);
    WriteFile(dir_ + "/client.key", kKey);
    WriteFile(dir_ + "/token", "file-token\n");
  }

  // A kubeconfig with every supported field, in data and file forms.
  std::string Full() const {
    return absl::StrReplaceAll(R"(apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: CA_B64
- name: byfile
  cluster:
    server: https://[::1]:8443/prefix/
    certificate-authority: ca.crt
    tls-server-name: kubernetes.default.svc
users:
- name: admin
  user:
    client-certificate-data: CERT_B64
    client-key-data: KEY_B64
- name: files
  user:
    client-certificate: DIR/client.crt
    client-key: client.key
    tokenFile: token
- name: static
  user:
    token: static-token
contexts:
- name: admin
  context:
    cluster: local
    user: admin
    namespace: team-a
- name: files
  context:
    cluster: byfile
    user: files
- name: static
  context: {cluster: local, user: static}
)",
                               {{"CA_B64", absl::Base64Escape(kCa)},
                                {"CERT_B64", absl::Base64Escape(kCert)},
                                {"KEY_B64", absl::Base64Escape(kKey)},
                                {"DIR", dir_}});
  }

  absl::StatusOr<RestConfig> Load(const std::string& yaml, const std::string& context = "") {
    const std::string path = dir_ + "/kubeconfig";
    WriteFile(path, yaml);
    KubeconfigOptions options;
    options.context = context;
    return LoadKubeconfig(path, options);
  }

  // Full() with one user's body replaced.
  absl::Status LoadWithUser(const std::string& user_body) {
    const std::string yaml = absl::StrCat(R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://10.0.0.1", certificate-authority-data: )",
                                          absl::Base64Escape(kCa), R"(}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
)",
                                          user_body);
    return Load(yaml).status();
  }

  absl::Status LoadWithCluster(const std::string& cluster_body) {
    return Load(absl::StrCat(R"(current-context: c
contexts:
- name: c
  context: {cluster: k}
clusters:
- name: k
  cluster:
)",
                             cluster_body))
        .status();
  }

  std::string dir_;
};

TEST_F(KubeconfigTest, CurrentContextWithInlineData) {
  absl::StatusOr<RestConfig> c = Load(Full());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint.host, "127.0.0.1");
  EXPECT_EQ(c->endpoint.port, "6443");
  EXPECT_EQ(c->base_path, "");
  EXPECT_EQ(c->endpoint.ca_pem, kCa);
  EXPECT_EQ(c->endpoint.client_cert_pem, kCert);
  EXPECT_EQ(c->endpoint.client_key_pem, kKey);
  EXPECT_EQ(c->bearer_token, "");
  EXPECT_EQ(c->bearer_token_file, "");
  EXPECT_EQ(c->namespace_name, "team-a");
  EXPECT_EQ(c->ServerUrl(), "https://127.0.0.1:6443");
}

TEST_F(KubeconfigTest, NamedContextWithFilesRelativeToTheKubeconfig) {
  absl::StatusOr<RestConfig> c = Load(Full(), "files");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint.host, "::1");
  EXPECT_EQ(c->endpoint.port, "8443");
  EXPECT_EQ(c->base_path, "/prefix");
  EXPECT_EQ(c->endpoint.tls_server_name, "kubernetes.default.svc");
  EXPECT_EQ(c->endpoint.ca_pem, kCa);
  EXPECT_EQ(c->endpoint.client_cert_pem, kCert);
  EXPECT_EQ(c->endpoint.client_key_pem, kKey);
  EXPECT_EQ(c->bearer_token_file, dir_ + "/token");
  EXPECT_EQ(c->namespace_name, "");
  EXPECT_EQ(c->ServerUrl(), "https://[::1]:8443/prefix");
}

TEST_F(KubeconfigTest, StaticToken) {
  absl::StatusOr<RestConfig> c = Load(Full(), "static");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bearer_token, "static-token");
  EXPECT_EQ(c->endpoint.client_cert_pem, "");
}

TEST_F(KubeconfigTest, DefaultsPortTo443AndKeepsTheRequestTimeoutDefault) {
  absl::StatusOr<RestConfig> c = Load(absl::StrReplaceAll(Full(), {{":6443", ""}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint.port, "443");
  EXPECT_EQ(c->request_timeout, absl::Seconds(10));
  EXPECT_EQ(c->user_agent, RestConfig::DefaultUserAgent());
}

TEST_F(KubeconfigTest, TheSidecarRefusesExecPluginsNamingTheCommandAndWhy) {
  const absl::Status s = LoadWithUser(R"(    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws-iam-authenticator
      args: [token]
)");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("exec credential plugin (command \"aws-iam-authenticator\")"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("runs in a Pod"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("`baton leases` does run exec plugins"));
}

// A kubeconfig whose user "u" has the exec section `exec_body`, loaded as
// `baton leases` loads it.
absl::StatusOr<RestConfig> LoadExec(const std::string& dir, const std::string& exec_body) {
  const std::string path = dir + "/exec.kubeconfig";
  WriteFile(path, absl::StrCat(R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://10.0.0.1", certificate-authority-data: )",
                               absl::Base64Escape(kCa), R"(}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    exec:
)",
                               exec_body));
  KubeconfigOptions options;
  options.allow_exec_plugins = true;
  return LoadKubeconfig(path, options);
}

TEST_F(KubeconfigTest, ExecPluginV1WithArgsEnvAndClusterInfo) {
  absl::StatusOr<RestConfig> c = LoadExec(dir_, R"(      apiVersion: client.authentication.k8s.io/v1
      command: bin/get-token
      args: [--cluster, prod]
      env:
      - {name: AWS_PROFILE, value: ops}
      - {name: EMPTY}
      interactiveMode: Never
      provideClusterInfo: true
      installHint: install get-token from your platform team
)");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->exec.has_value());
  const ExecPlugin& e = *c->exec;
  EXPECT_EQ(e.api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(e.command, dir_ + "/bin/get-token");  // relative with a '/': the kubeconfig's dir
  EXPECT_EQ(e.args, (std::vector<std::string>{"--cluster", "prod"}));
  EXPECT_EQ(e.env, (std::vector<std::pair<std::string, std::string>>{{"AWS_PROFILE", "ops"},
                                                                     {"EMPTY", ""}}));
  EXPECT_EQ(e.interactive, ExecPlugin::Interactive::kNever);
  EXPECT_TRUE(e.provide_cluster_info);
  EXPECT_EQ(e.install_hint, "install get-token from your platform team");
  EXPECT_EQ(c->bearer_token, "");
}

TEST_F(KubeconfigTest, ExecPluginV1beta1DefaultsToIfAvailableAndLooksUpBareNamesInPath) {
  absl::StatusOr<RestConfig> c =
      LoadExec(dir_, R"(      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->exec->command, "gke-gcloud-auth-plugin");
  EXPECT_EQ(c->exec->interactive, ExecPlugin::Interactive::kIfAvailable);
  EXPECT_FALSE(c->exec->provide_cluster_info);
}

TEST_F(KubeconfigTest, ExecPluginMistakesAreRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n",
       "apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported"},
      {"      apiVersion: client.authentication.k8s.io/v1\n      command: x\n",
       "interactiveMode \"\" is not one of Never, IfAvailable, Always (required by v1)"},
      {"      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n",
       "has no command"},
      {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: x\n"
       "      env: [{value: v}]\n",
       "every env entry needs a name"},
  };
  for (const auto& [body, want] : cases) {
    const absl::Status s = LoadExec(dir_, body).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(std::string(s.message()), HasSubstr(want)) << body;
  }
}

TEST_F(KubeconfigTest, ExecPluginAndATokenTogetherAreRefused) {
  const std::string path = dir_ + "/both";
  WriteFile(path, absl::StrCat(R"(current-context: c
clusters:
- {name: k, cluster: {server: "https://10.0.0.1", certificate-authority-data: )",
                               absl::Base64Escape(kCa), R"(}}
contexts:
- {name: c, context: {cluster: k, user: u}}
users:
- name: u
  user:
    token: t
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x}
)"));
  KubeconfigOptions options;
  options.allow_exec_plugins = true;
  const absl::Status s = LoadKubeconfig(path, options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("both an exec plugin and a token"));
}

TEST_F(KubeconfigTest, RefusesAuthProvidersNamingTheProvider) {
  const absl::Status s = LoadWithUser("    auth-provider:\n      name: gcp\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("auth-provider \"gcp\""));
}

TEST_F(KubeconfigTest, RefusesOtherAuthenticationMethods) {
  EXPECT_THAT(std::string(LoadWithUser("    username: a\n    password: b\n").message()),
              HasSubstr("basic authentication"));
  EXPECT_THAT(std::string(LoadWithUser("    token: t\n    as: someone\n").message()),
              HasSubstr("impersonation (\"as\")"));
  EXPECT_THAT(std::string(LoadWithUser("    tokn: t\n").message()),
              HasSubstr("unknown field \"tokn\""));
}

TEST_F(KubeconfigTest, RefusesInsecureSkipTlsVerify) {
  const absl::Status s =
      LoadWithCluster("    server: https://10.0.0.1\n    insecure-skip-tls-verify: true\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("insecure-skip-tls-verify"));
}

TEST_F(KubeconfigTest, RefusesAClusterWithoutCa) {
  const absl::Status s = LoadWithCluster("    server: https://10.0.0.1\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no certificate-authority"));
}

TEST_F(KubeconfigTest, RefusesPlainHttpAndProxies) {
  EXPECT_THAT(std::string(LoadWithCluster("    server: http://10.0.0.1\n    "
                                          "certificate-authority: ca.crt\n")
                              .message()),
              HasSubstr("only https://"));
  EXPECT_THAT(std::string(LoadWithCluster("    server: https://10.0.0.1\n    proxy-url: "
                                          "http://proxy:3128\n    certificate-authority: ca.crt\n")
                              .message()),
              HasSubstr("proxy-url"));
}

TEST_F(KubeconfigTest, MissingFilesAreReportedWithTheirPath) {
  const absl::Status s = LoadWithUser("    tokenFile: /nonexistent/token\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("/nonexistent/token"));
}

TEST_F(KubeconfigTest, CertificateWithoutKeyIsRefused) {
  const absl::Status s = LoadWithUser("    client-certificate: client.crt\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("needs both"));
}

TEST_F(KubeconfigTest, BadBase64IsRefused) {
  const absl::Status s = LoadWithUser("    client-certificate-data: '!!!'\n    client-key: k\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("not valid base64"));
}

TEST_F(KubeconfigTest, UnknownContextOrMissingPieces) {
  EXPECT_THAT(std::string(Load(Full(), "nope").status().message()),
              HasSubstr("no context named \"nope\""));
  EXPECT_THAT(std::string(Load("clusters: []\n").status().message()),
              HasSubstr("no current-context"));
  EXPECT_THAT(std::string(Load(absl::StrReplaceAll(Full(), {{"cluster: local", "cluster: gone"}}))
                              .status()
                              .message()),
              HasSubstr("no cluster named \"gone\""));
}

TEST_F(KubeconfigTest, MalformedYamlIsInvalidArgument) {
  for (const char* yaml : {"current-context: [unclosed", "- a list\n- not a map\n",
                           "current-context: c\ncontexts: {c: 1}\n",
                           "current-context: c\ncontexts:\n- name: c\n  context: [1]\n"}) {
    const absl::StatusOr<RestConfig> c = Load(yaml);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
  }
}

TEST_F(KubeconfigTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadKubeconfig(dir_ + "/absent").status().code(), absl::StatusCode::kNotFound);
}

// Merging as kubectl merges $KUBECONFIG: the first current-context set
// wins; each named entry comes whole from the first file that has it, and
// its relative paths resolve against that file's directory.
class MergedKubeconfigTest : public KubeconfigTest {
 protected:
  void SetUp() override {
    KubeconfigTest::SetUp();
    other_ = NewTempDir();
    WriteFile(other_ + "/other-ca.crt", kOtherCa);
    first_ = dir_ + "/first";
    second_ = other_ + "/second";
    // first: no current-context; a user that shadows second's, a context.
    WriteFile(first_, R"(users:
- name: shared
  user: {token: from-first}
contexts:
- name: dev
  context: {cluster: remote, user: shared, namespace: dev-ns}
)");
    // second: the current-context, the cluster (CA by relative path), and a
    // "shared" user and "dev" context that the first file's shadow.
    WriteFile(second_, R"(current-context: dev
clusters:
- name: remote
  cluster: {server: "https://10.1.2.3:6443", certificate-authority: other-ca.crt}
users:
- name: shared
  user: {token: from-second}
- name: own
  user: {token: second-only}
contexts:
- name: dev
  context: {cluster: remote, user: own, namespace: ignored}
- name: prod
  context: {cluster: remote, user: own, namespace: prod-ns}
)");
  }

  absl::StatusOr<RestConfig> Merge(const std::string& context = "") {
    KubeconfigOptions options;
    options.context = context;
    return LoadMergedKubeconfig({first_, dir_ + "/absent", second_}, options);
  }

  static constexpr char kOtherCa[] =
      "-----BEGIN CERTIFICATE-----\nOTHER\n-----END CERTIFICATE-----\n";
  std::string other_, first_, second_;
};

TEST_F(MergedKubeconfigTest, FirstDefinitionWinsAndPathsFollowTheirFile) {
  absl::StatusOr<RestConfig> c = Merge();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->namespace_name, "dev-ns");    // context "dev" of the first file
  EXPECT_EQ(c->bearer_token, "from-first");  // user "shared" of the first file
  EXPECT_EQ(c->endpoint.host, "10.1.2.3");   // cluster only in the second
  EXPECT_EQ(c->endpoint.ca_pem, kOtherCa);   // relative to the second's directory
}

TEST_F(MergedKubeconfigTest, ContextFlagPicksAnyFilesContext) {
  absl::StatusOr<RestConfig> c = Merge("prod");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->namespace_name, "prod-ns");
  EXPECT_EQ(c->bearer_token, "second-only");
  EXPECT_THAT(std::string(Merge("staging").status().message()),
              HasSubstr("no context named \"staging\""));
}

TEST_F(MergedKubeconfigTest, NoExistingFileIsNotFoundNamingThePaths) {
  const absl::Status s = LoadMergedKubeconfig({dir_ + "/a", dir_ + "/b"}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(dir_ + "/a, " + dir_ + "/b"));
}

TEST_F(MergedKubeconfigTest, AMalformedFileNamesItself) {
  WriteFile(first_, "users: [unclosed\n");
  const absl::Status s = Merge().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(first_ + ": malformed YAML"));
}

TEST(KubeconfigPathsTest, FlagThenEnvironmentListThenHome) {
  using V = std::vector<std::string>;
  EXPECT_EQ(KubeconfigPaths("/x", "/a:/b", "/home/u"), V{"/x"});
  EXPECT_EQ(KubeconfigPaths("", "/a::/b:/a:", "/home/u"), (V{"/a", "/b"}));
  EXPECT_EQ(KubeconfigPaths("", "", "/home/u"), V{"/home/u/.kube/config"});
  EXPECT_EQ(KubeconfigPaths("", ":", ""), V{});
}

TEST(ServerUrlTest, ParsesAndRefuses) {
  RestConfig c;
  ASSERT_TRUE(SetServerUrl("https://api.example.com", c).ok());
  EXPECT_EQ(c.endpoint.host, "api.example.com");
  EXPECT_EQ(c.endpoint.port, "443");
  ASSERT_TRUE(SetServerUrl("https://[fd00::1]", c).ok());
  EXPECT_EQ(c.endpoint.host, "fd00::1");
  EXPECT_EQ(c.endpoint.port, "443");
  for (const char* bad : {"http://a", "https://", "https://a:0", "https://a:70000", "https://a:x",
                          "https://u@a", "https://a/?q", "https://[::1", "https://[::1]x"}) {
    EXPECT_EQ(SetServerUrl(bad, c).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

class InClusterConfigTest : public ::testing::Test {
 protected:
  // The environment changes only while the test runs alone on its thread
  // (hence the NOLINTs: setenv is unsafe only beside other threads).
  void SetUp() override {
    dir_ = NewTempDir();
    WriteFile(dir_ + "/ca.crt", kCa);
    WriteFile(dir_ + "/token", "sa-token\n");
    WriteFile(dir_ + "/namespace", "team-b\n");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);  // NOLINT(concurrency-mt-unsafe)
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);        // NOLINT(concurrency-mt-unsafe)
  }
  void TearDown() override {
    unsetenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
    unsetenv("KUBERNETES_SERVICE_PORT");  // NOLINT(concurrency-mt-unsafe)
  }
  std::string dir_;
};

TEST_F(InClusterConfigTest, ReadsTheServiceAccountMount) {
  absl::StatusOr<RestConfig> c = LoadInClusterConfig(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->endpoint.host, "10.96.0.1");
  EXPECT_EQ(c->endpoint.port, "443");
  EXPECT_EQ(c->endpoint.tls_server_name, "");  // the service IP is in the API server's certificate
  EXPECT_EQ(c->endpoint.ca_pem, kCa);
  EXPECT_EQ(c->bearer_token_file, dir_ + "/token");
  EXPECT_EQ(c->bearer_token, "");
  EXPECT_EQ(c->namespace_name, "team-b");
}

TEST_F(InClusterConfigTest, NamespaceFileIsOptional) {
  std::remove((dir_ + "/namespace").c_str());
  absl::StatusOr<RestConfig> c = LoadInClusterConfig(dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->namespace_name, "");
}

TEST_F(InClusterConfigTest, OutsideAClusterIsFailedPrecondition) {
  unsetenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
  const absl::Status s = LoadInClusterConfig(dir_).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("KUBERNETES_SERVICE_HOST"));
}

TEST_F(InClusterConfigTest, MissingTokenOrCaIsFailedPrecondition) {
  WriteFile(dir_ + "/token", "\n");
  EXPECT_THAT(std::string(LoadInClusterConfig(dir_).status().message()), HasSubstr("empty"));
  std::remove((dir_ + "/token").c_str());
  EXPECT_EQ(LoadInClusterConfig(dir_).status().code(), absl::StatusCode::kFailedPrecondition);
  std::remove((dir_ + "/ca.crt").c_str());
  EXPECT_THAT(std::string(LoadInClusterConfig(dir_).status().message()),
              HasSubstr("no cluster CA"));
}

TEST_F(InClusterConfigTest, BadPortIsRefused) {
  setenv("KUBERNETES_SERVICE_PORT", "https", 1);  // NOLINT(concurrency-mt-unsafe)
  EXPECT_EQ(LoadInClusterConfig(dir_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UserAgentTest, NamesBatonAndItsVersion) {
  EXPECT_THAT(RestConfig::DefaultUserAgent(),
              ::testing::MatchesRegex(R"(baton/[0-9.]+ \(linux/\w+\))"));
}

}  // namespace
}  // namespace baton::kube

#include "sidecar/kube/rest_config.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sidecar/common/version.h"
#include "sidecar/kube/read_file.h"

namespace baton::kube {
namespace {

#if defined(__x86_64__)
constexpr char kArch[] = "amd64";
#elif defined(__aarch64__)
constexpr char kArch[] = "arm64";
#else
constexpr char kArch[] = "unknown";
#endif

absl::Status ValidatePort(absl::string_view port, absl::string_view what) {
  int n = 0;
  if (!absl::SimpleAtoi(port, &n) || n <= 0 || n > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad port \"", port, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RestConfig::DefaultUserAgent() {
  return absl::StrCat("baton/", kVersion, " (linux/", kArch, ")");
}

std::string RestConfig::ServerUrl() const {
  return absl::StrCat("https://", endpoint.Authority(), base_path);
}

absl::Status SetServerUrl(absl::string_view url, RestConfig& config) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("server URL \"", url, "\": ", why));
  };
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "https://")) {
    return bad("only https:// is supported (baton always verifies the server's certificate)");
  }
  const size_t path_start = rest.find('/');
  absl::string_view authority = rest.substr(0, path_start);
  absl::string_view path = path_start == absl::string_view::npos ? "" : rest.substr(path_start);
  if (absl::StrContains(authority, '@')) return bad("user info is not supported");
  if (absl::StrContains(path, '?') || absl::StrContains(path, '#')) {
    return bad("queries and fragments are not supported");
  }
  absl::string_view host = authority;
  absl::string_view port = "443";
  if (absl::ConsumePrefix(&host, "[")) {
    const size_t close = host.find(']');
    if (close == absl::string_view::npos) return bad("unterminated IPv6 address");
    absl::string_view after = host.substr(close + 1);
    host = host.substr(0, close);
    if (!after.empty()) {
      if (!absl::ConsumePrefix(&after, ":")) return bad("junk after IPv6 address");
      port = after;
    }
  } else if (const size_t colon = host.rfind(':'); colon != absl::string_view::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host.empty()) return bad("no host");
  if (absl::Status s = ValidatePort(port, absl::StrCat("server URL \"", url, "\"")); !s.ok()) {
    return s;
  }
  while (absl::ConsumeSuffix(&path, "/")) {
  }
  config.endpoint.host = std::string(host);
  config.endpoint.port = std::string(port);
  config.base_path = std::string(path);
  return absl::OkStatus();
}

absl::StatusOr<RestConfig> LoadInClusterConfig(absl::string_view service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return absl::FailedPreconditionError(
        "not running in a Kubernetes Pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
        "are not set; pass --kubeconfig to run outside a cluster");
  }
  RestConfig config;
  config.endpoint.host = host;
  config.endpoint.port = port;
  if (absl::Status s = ValidatePort(config.endpoint.port, "KUBERNETES_SERVICE_PORT"); !s.ok()) {
    return s;
  }

  const std::string dir(service_account_dir);
  absl::StatusOr<std::string> ca = ReadFile(dir + "/ca.crt");
  if (!ca.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: no cluster CA: ", ca.status().message()));
  }
  config.endpoint.ca_pem = *std::move(ca);

  // Read once now so a Pod without a token fails at start-up, not on its
  // first renew; the client re-reads it as it rotates.
  config.bearer_token_file = dir + "/token";
  absl::StatusOr<std::string> token = ReadFile(config.bearer_token_file);
  if (!token.ok() || absl::StripAsciiWhitespace(*token).empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster config: no ServiceAccount token at ", config.bearer_token_file,
                     token.ok() ? " (empty file)" : absl::StrCat(": ", token.status().message()),
                     "; is automountServiceAccountToken disabled?"));
  }

  if (absl::StatusOr<std::string> ns = ReadFile(dir + "/namespace"); ns.ok()) {
    config.namespace_name = std::string(absl::StripAsciiWhitespace(*ns));
  }
  return config;
}

}  // namespace baton::kube

// baton: the leader-election sidecar.
//
// Flags are parsed here and nowhere else, and turned at once into a
// SidecarConfig. Exit codes: 0 after a clean shutdown, 2 for bad
// configuration (with a message naming the flag), 1 for anything else.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sidecar/common/log.h"
#include "sidecar/common/version.h"
#include "sidecar/main/config.h"

ABSL_FLAG(std::string, lease_name, "", "Name of the coordination.k8s.io/v1 Lease to hold. Required.");
ABSL_FLAG(std::string, lease_namespace, "",
          "Namespace of the Lease. Default: $POD_NAMESPACE, else the in-cluster "
          "ServiceAccount namespace file.");
ABSL_FLAG(std::string, identity, "",
          "Holder identity written into the Lease. Default: <$POD_NAME or "
          "hostname>_<random suffix>, new for every process.");
ABSL_FLAG(absl::Duration, lease_duration, baton::ElectionTiming{}.lease_duration,
          "How long a holder's claim lasts after its last renew; written into the Lease. "
          "Whole seconds.");
ABSL_FLAG(absl::Duration, renew_deadline, baton::ElectionTiming{}.renew_deadline,
          "A leader that cannot renew for this long stops leading. Must be < --lease-duration.");
ABSL_FLAG(absl::Duration, retry_period, baton::ElectionTiming{}.retry_period,
          "Interval between acquire/renew attempts (jittered +20%). Must satisfy "
          "1.2 × --retry-period < --renew-deadline.");
ABSL_FLAG(std::string, kubeconfig, "",
          "Path to a kubeconfig. Default: in-cluster config (ServiceAccount token).");
ABSL_FLAG(std::string, http_addr, baton::SidecarConfig{}.http_addr,
          "host:port of the local HTTP API (/leader, /readyz/leader, /healthz, /metrics).");
ABSL_FLAG(std::string, grpc_addr, baton::SidecarConfig{}.grpc_addr,
          "host:port of the local gRPC API (baton.v1.LeaderElection, grpc.health.v1).");
ABSL_FLAG(bool, release_on_shutdown, true,
          "On SIGTERM/SIGINT, release the Lease so a follower takes over at once.");

namespace baton {
namespace {

constexpr char kServiceAccountNamespaceFile[] =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string ReadFileOrEmpty(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "baton";
  return buf;
}

std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  absl::BitGen gen;
  std::string s;
  for (int i = 0; i < 5; ++i) s += kAlphabet[absl::Uniform<size_t>(gen, 0, sizeof(kAlphabet) - 1)];
  return s;
}

// DESIGN.md spells flags with dashes (--lease-name); Abseil names them with
// underscores. Rewrite the name part of every "--flag[=value]" before parsing
// so both spellings work.
std::vector<char*> DashesToUnderscores(int argc, char** argv, std::vector<std::string>& storage) {
  storage.assign(argv, argv + argc);
  for (size_t i = 1; i < storage.size(); ++i) {
    std::string& arg = storage[i];
    if (arg == "--") break;
    if (!absl::StartsWith(arg, "--")) continue;
    const size_t end = std::min(arg.find('='), arg.size());
    std::replace(arg.begin() + 2, arg.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  }
  std::vector<char*> out;
  for (std::string& a : storage) out.push_back(a.data());
  return out;
}

ConfigInputs InputsFromFlags() {
  ConfigInputs in;
  in.lease_name = absl::GetFlag(FLAGS_lease_name);
  in.lease_namespace = absl::GetFlag(FLAGS_lease_namespace);
  in.identity = absl::GetFlag(FLAGS_identity);
  in.timing.lease_duration = absl::GetFlag(FLAGS_lease_duration);
  in.timing.renew_deadline = absl::GetFlag(FLAGS_renew_deadline);
  in.timing.retry_period = absl::GetFlag(FLAGS_retry_period);
  in.kubeconfig = absl::GetFlag(FLAGS_kubeconfig);
  in.http_addr = absl::GetFlag(FLAGS_http_addr);
  in.grpc_addr = absl::GetFlag(FLAGS_grpc_addr);
  in.release_on_shutdown = absl::GetFlag(FLAGS_release_on_shutdown);
  in.pod_name = Env("POD_NAME");
  in.pod_namespace = Env("POD_NAMESPACE");
  in.incluster_namespace = ReadFileOrEmpty(kServiceAccountNamespaceFile);
  in.hostname = Hostname();
  in.random_suffix = RandomSuffix();
  return in;
}

int Main(int argc, char** argv) {
  absl::FlagsUsageConfig usage;
  usage.version_string = [] { return absl::StrCat("baton ", kVersion, "\n"); };
  usage.contains_help_flags = [](absl::string_view path) {
    return absl::StrContains(path, "sidecar/main/");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(
      "leader-election sidecar: holds a coordination.k8s.io/v1 Lease for the "
      "application beside it and tells it, over localhost, whether it leads.\n"
      "  baton --lease-name=NAME [flags]\n"
      "Flags may be written with dashes or underscores (--lease-name, --lease_name).");
  std::vector<std::string> storage;
  std::vector<char*> args = DashesToUnderscores(argc, argv, storage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());

  absl::StatusOr<SidecarConfig> config = ConfigFrom(InputsFromFlags());
  if (!config.ok()) {
    std::fprintf(stderr, "baton: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  InitLogging();
  spdlog::info("event=configured version={} lease={}/{} identity={} lease_duration={} "
               "renew_deadline={} retry_period={}",
               kVersion, config->lease_namespace, config->lease_name, LogValue(config->identity),
               absl::FormatDuration(config->timing.lease_duration),
               absl::FormatDuration(config->timing.renew_deadline),
               absl::FormatDuration(config->timing.retry_period));
  return 0;
}

}  // namespace
}  // namespace baton

int main(int argc, char** argv) { return baton::Main(argc, argv); }

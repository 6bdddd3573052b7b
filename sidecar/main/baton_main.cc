// baton: the leader-election sidecar.
//
// Flags are parsed here and nowhere else, and turned at once into a
// SidecarConfig; then the Daemon runs until SIGTERM, SIGINT or SIGHUP. Exit codes: 0
// after a clean shutdown, 2 for bad configuration (with a message naming the
// flag), 1 when the sidecar cannot start (e.g. a port in use).
//
// `baton run [flags] -- CMD [ARGS...]` campaigns the same way and runs CMD
// while leading (run_command.h, which also has its exit codes).
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/common/build_info.h"
#include "sidecar/common/log.h"
#include "sidecar/common/version.h"
#include "sidecar/kube/kubeconfig.h"
#include "sidecar/kube/rest_config.h"
#include "sidecar/main/command_line.h"
#include "sidecar/main/config.h"
#include "sidecar/main/daemon.h"
#include "sidecar/main/run_command.h"
#include "sidecar/run/run_policy.h"
#include "sidecar/tools/leases_command.h"

ABSL_FLAG(std::string, lease_name, "",
          "Name of the coordination.k8s.io/v1 Lease to hold. Required.");
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
          "host:port of the local HTTP API (/leader, /leader/watch, /readyz/leader, /healthz, "
          "/metrics).");
ABSL_FLAG(std::string, grpc_addr, baton::SidecarConfig{}.grpc_addr,
          "host:port of the local gRPC API (baton.v1.LeaderElection, grpc.health.v1).");
ABSL_FLAG(std::string, metrics_addr, "",
          "Optional host:port serving only /metrics and the probes (e.g. 0.0.0.0:9090 for "
          "Prometheus), without /leader or Resign.");
ABSL_FLAG(bool, release_on_shutdown, true,
          "On SIGTERM/SIGINT/SIGHUP, release the Lease so a follower takes over at once.");
ABSL_FLAG(absl::Duration, api_timeout, absl::ZeroDuration(),
          "Deadline of each API-server request. Default: 5s, or half of --renew-deadline if "
          "that is shorter.");
ABSL_FLAG(absl::Duration, sse_heartbeat, baton::SidecarConfig{}.sse_heartbeat,
          "GET /leader/watch: send a heartbeat comment after this long without an event "
          "(at least 100ms). A client's ?heartbeat= may ask for a shorter one.");
ABSL_FLAG(
    absl::Duration, shutdown_grace, absl::ZeroDuration(),
    "On SIGTERM/SIGINT/SIGHUP: time allowed for the promises given to settle and the Lease to "
    "be released, and again for closing the local servers. Default: --renew-deadline + 1s, "
    "which every promise ends within. Keep terminationGracePeriodSeconds above twice this.");
ABSL_FLAG(absl::Duration, max_unnamed_valid_for, baton::SidecarConfig{}.max_unnamed_valid_for,
          "The longest promise (validFor) GET /leader, GET / and GetLeadership give a reader "
          "that names neither itself (client_id) nor a bound (max_valid_for). It cannot "
          "acknowledge, so a graceful handover waits up to this long for it; a reader that "
          "asks again within it stays covered. Must be shorter than --shutdown-grace.");
ABSL_FLAG(bool, events, true,
          "Record Kubernetes Events (events.k8s.io/v1) on the Lease when this sidecar becomes "
          "leader, stops leading, releases the Lease or sees a new leader. Needs create on "
          "events; without it baton logs once and records none.");
ABSL_FLAG(std::string, leader_label, "",
          "A label key, e.g. baton.dev/leader: while this sidecar leads, its Pod ($POD_NAME) "
          "carries KEY=true, so a Service can select the leader. Needs list and patch on pods. "
          "Default: none.");
ABSL_FLAG(bool, native_sidecar, false,
          "baton runs as a native sidecar (an init container with restartPolicy: Always), which "
          "the kubelet stops only after the Pod's application containers. On SIGTERM it reads "
          "its Pod ($POD_NAME; needs get on pods): if every application container has exited, "
          "no reader can act on a promise any more, and it releases the Lease at once. "
          "Otherwise, or if the Pod cannot be read, it waits for the promises as usual.");
ABSL_FLAG(std::string, log_format, "logfmt",
          "Log lines on stderr as logfmt (ts=... level=... event=... key=value) or json (one "
          "object per line, the same keys).");
ABSL_FLAG(std::string, log_level, "info", "Lowest level logged: debug, info, warn or error.");

// `baton run` (sidecar/main/run_command.h); the election flags are shared.
ABSL_FLAG(std::string, stop_signal, "SIGTERM",
          "baton run: the signal that asks the command to stop (sent to its process group).");
ABSL_FLAG(absl::Duration, stop_grace, absl::Seconds(5),
          "baton run: time between the stop signal and SIGKILL of the command's process group. "
          "Plus 200ms, it must be shorter than --renew-deadline − 1.2 × --retry-period.");
ABSL_FLAG(std::string, restart, "on-failure",
          "baton run: when the command exits on its own while leading: always, on-failure "
          "(unless it exited 0) or never run it again. Not run again: baton releases the Lease "
          "and exits with the command's code.");

// `baton leases` (sidecar/tools/leases_command.h); --kubeconfig is shared.
ABSL_FLAG(std::string, namespace, "",
          "baton leases: the namespace to audit. Default: the kubeconfig context's, else "
          "\"default\".");
ABSL_FLAG(bool, all_namespaces, false, "baton leases: audit every namespace.");
ABSL_FLAG(std::string, output, "text",
          "baton leases: text (one line per Lease), wide (text plus acquire time, renew age and "
          "validity estimate) or json.");
ABSL_FLAG(std::string, context, "",
          "baton leases: the kubeconfig context to use. Default: its current-context.");
ABSL_FLAG(bool, watch, false,
          "baton leases: after the listing, print each Lease change (new holder, transitions, "
          "duration, deletion) as it happens, until interrupted.");

namespace baton {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
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

// baton's flags: every flag defined in this file (Abseil's own, such as
// --flagfile, are not baton's and are not accepted).
std::vector<absl::CommandLineFlag*> BatonFlags() {
  const std::string file = absl::FindCommandLineFlag("lease_name")->Filename();
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->Filename() == file) flags.push_back(flag);
  }
  return flags;
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
  in.metrics_addr = absl::GetFlag(FLAGS_metrics_addr);
  in.release_on_shutdown = absl::GetFlag(FLAGS_release_on_shutdown);
  in.api_timeout = absl::GetFlag(FLAGS_api_timeout);
  in.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  in.events = absl::GetFlag(FLAGS_events);
  in.leader_label = absl::GetFlag(FLAGS_leader_label);
  in.native_sidecar = absl::GetFlag(FLAGS_native_sidecar);
  in.log_format = absl::GetFlag(FLAGS_log_format);
  in.log_level = absl::GetFlag(FLAGS_log_level);
  in.sse_heartbeat = absl::GetFlag(FLAGS_sse_heartbeat);
  in.max_unnamed_valid_for = absl::GetFlag(FLAGS_max_unnamed_valid_for);
  in.pod_name = Env("POD_NAME");
  in.pod_namespace = Env("POD_NAMESPACE");
  in.hostname = Hostname();
  in.random_suffix = RandomSuffix();
  return in;
}

// `baton leases [flags]`: the operator's audit command, its flags parsed.
int LeasesMain(const ParsedCommandLine& parsed) {
  if (!parsed.positional.empty()) {
    std::fprintf(stderr, "baton leases: unexpected argument %s\n", parsed.positional[0].c_str());
    return tools::kLeasesBadUsage;
  }
  absl::StatusOr<tools::LeasesOutput> output =
      tools::ParseLeasesOutput(absl::GetFlag(FLAGS_output));
  if (!output.ok()) {
    std::fprintf(stderr, "baton leases: %s\n", std::string(output.status().message()).c_str());
    return tools::kLeasesBadUsage;
  }
  tools::LeasesOptions options;
  options.namespace_name = absl::GetFlag(FLAGS_namespace);
  options.all_namespaces = absl::GetFlag(FLAGS_all_namespaces);
  options.kubeconfig = absl::GetFlag(FLAGS_kubeconfig);
  options.kubeconfig_env = Env("KUBECONFIG");
  options.home = Env("HOME");
  options.context = absl::GetFlag(FLAGS_context);
  options.watch = absl::GetFlag(FLAGS_watch);
  options.output = *output;
  return tools::RunLeases(options, *SystemClock(), std::cout, std::cerr);
}

enum class Command { kSidecar, kRun, kLeases };

// The flags that mean something to one command only, and how its usage line
// names it. Every other flag is the sidecar's, which `baton run` shares
// (`baton leases` reads only --kubeconfig of them and ignores the rest).
struct CommandFlags {
  Command command;
  absl::string_view usage;
  std::vector<absl::string_view> flags;
};
const std::vector<CommandFlags>& OwnFlags() {
  static const auto* const own = new std::vector<CommandFlags>{
      {Command::kRun, "`baton run -- CMD`", {"stop_signal", "stop_grace", "restart"}},
      {Command::kLeases,
       "`baton leases` (the sidecar's namespace flag is --lease-namespace)",
       {"namespace", "all_namespaces", "output", "context", "watch"}},
  };
  return *own;
}

// Refuses a flag given to a command it does not belong to, whatever its
// value, rather than ignore it: `baton --namespace=x` is not a sidecar that
// campaigns in x, and `--stop-grace=5s` without `run` stops nothing.
absl::Status RejectForeignFlags(Command command, const ParsedCommandLine& parsed) {
  for (const CommandFlags& owner : OwnFlags()) {
    if (owner.command == command) continue;
    for (absl::string_view flag : owner.flags) {
      if (!parsed.given.contains(flag)) continue;
      return absl::InvalidArgumentError(
          absl::StrCat(DashedFlag(flag), " belongs to ", owner.usage));
    }
  }
  return absl::OkStatus();
}

// `baton run`'s own flags and the command, as the Runner's options (the
// acknowledgement is wired by RunCommand). InvalidArgument naming the flag.
absl::StatusOr<run::Runner::Options> RunOptionsFromFlags(const std::vector<std::string>& command,
                                                         const ElectionTiming& timing) {
  run::Runner::Options options;
  options.argv = command;
  if (options.argv.empty()) {
    return absl::InvalidArgumentError(
        "baton run needs a command: baton run [flags] -- CMD [ARGS...]");
  }
  absl::StatusOr<run::RestartPolicy> restart =
      run::ParseRestartPolicy(absl::GetFlag(FLAGS_restart));
  if (!restart.ok()) return restart.status();
  absl::StatusOr<int> stop_signal = run::ParseStopSignal(absl::GetFlag(FLAGS_stop_signal));
  if (!stop_signal.ok()) return stop_signal.status();
  options.restart = *restart;
  options.stop_signal = *stop_signal;
  options.stop_grace = absl::GetFlag(FLAGS_stop_grace);
  if (absl::Status s =
          run::ValidateStopGrace(options.stop_grace, timing.renew_deadline, timing.retry_period);
      !s.ok()) {
    return s;
  }
  // A command that exits at once is not run again more often than the
  // election itself retries.
  options.restart_delay = timing.retry_period;
  return options;
}

// Waits for one of `signals` (blocked in every thread).
int AwaitShutdownSignal(const sigset_t& signals) {
  int sig = -1;
  sigwait(&signals, &sig);
  return sig;
}

constexpr char kUsage[] =
    "baton: leader-election sidecar: holds a coordination.k8s.io/v1 Lease for the\n"
    "application beside it and tells it, over localhost, whether it leads.\n"
    "  baton --lease-name=NAME [flags]      run the sidecar\n"
    "  baton run --lease-name=NAME [flags] -- CMD [ARGS...]\n"
    "                                      run CMD only while leading (docs/run.md)\n"
    "  baton leases [--namespace=NS | --all-namespaces] [--output=text|wide|json] [--watch]\n"
    "                                      audit Leases (see baton leases --help)\n"
    "Every flag may also be set in the environment as BATON_<NAME> (--lease-name:\n"
    "BATON_LEASE_NAME); a flag on the command line wins over its variable.\n\n"
    "Flags:\n";

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Command command = Command::kSidecar;
  if (!args.empty() && args[0] == "run") {
    command = Command::kRun;
  } else if (!args.empty() && args[0] == "leases") {
    command = Command::kLeases;
  } else if (!args.empty() && !absl::StartsWith(args[0], "-")) {
    std::fprintf(stderr,
                 "baton: unknown command %s: the commands are run and leases (baton --help)\n",
                 args[0].c_str());
    return 2;
  }
  if (command != Command::kSidecar) args.erase(args.begin());

  const std::vector<absl::CommandLineFlag*> flags = BatonFlags();
  const EnvironmentLookup environment = ProcessEnvironment();
  absl::StatusOr<ParsedCommandLine> parsed = ParseCommandLine(flags, args, environment);
  if (!parsed.ok()) {
    std::fprintf(stderr, "baton: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  if (parsed->help) {
    // The audit command's help lists its own flags.
    if (command == Command::kLeases) {
      std::cout << tools::kLeasesHelp;
    } else {
      std::cout << kUsage << FlagsHelp(flags);
    }
    return 0;
  }
  if (parsed->version) {
    std::cout << "baton " << kVersion << " (commit " << kCommit << ")\n";
    return 0;
  }
  if (command == Command::kLeases) {
    if (absl::Status s = RejectForeignFlags(command, *parsed); !s.ok()) {
      std::fprintf(stderr, "baton leases: %s\n", std::string(s.message()).c_str());
      return tools::kLeasesBadUsage;
    }
    return LeasesMain(*parsed);
  }
  const bool run_mode = command == Command::kRun;
  if (!run_mode && !parsed->positional.empty()) {
    std::fprintf(stderr, "baton: unexpected argument %s (to run a command: baton run -- CMD)\n",
                 parsed->positional[0].c_str());
    return 2;
  }
  // Bad configuration: the message names the flags, and the environment
  // variables behind them.
  auto bad_config = [&](const absl::Status& s) {
    std::fprintf(stderr, "baton: %s\n",
                 NameEnvironmentSources(std::string(s.message()), *parsed, environment).c_str());
    return 2;
  };

  // Block the shutdown signals before any thread starts, so every thread
  // inherits the mask and only sigwait below receives them.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  // SIGHUP (a closed terminal, a supervisor's reload) would otherwise end the
  // process at once, without the step-down handshake or the release.
  sigaddset(&shutdown_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  ConfigInputs inputs = InputsFromFlags();
  absl::Status flags_ok = RejectForeignFlags(command, *parsed);
  if (flags_ok.ok()) flags_ok = ValidateFlags(inputs);
  absl::StatusOr<run::Runner::Options> run_options;
  if (flags_ok.ok() && run_mode) {
    run_options = RunOptionsFromFlags(parsed->positional, inputs.timing);
    flags_ok = run_options.status();
  }
  if (!flags_ok.ok()) return bad_config(flags_ok);
  const std::string& kubeconfig = inputs.kubeconfig;
  absl::StatusOr<kube::RestConfig> rest =
      kubeconfig.empty() ? kube::LoadInClusterConfig() : kube::LoadKubeconfig(kubeconfig);
  if (!rest.ok()) {
    std::fprintf(stderr, "baton: %s%s\n", kubeconfig.empty() ? "in-cluster config: " : "",
                 std::string(rest.status().message()).c_str());
    if (kubeconfig.empty()) std::fprintf(stderr, "baton: outside a Pod, pass --kubeconfig\n");
    return 2;
  }
  inputs.client_namespace = rest->namespace_name;
  absl::StatusOr<SidecarConfig> config = ConfigFrom(inputs);
  if (!config.ok()) return bad_config(config.status());
  InitLogging(config->log);
  // Debian's Abseil is built without NDEBUG, which leaves absl::Mutex's
  // deadlock detection on: every lock then updates a global lock graph under a
  // global lock. Lock order is checked by clang's thread-safety analysis at
  // build time instead.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  spdlog::info(
      "event=configured version={} lease={}/{} identity={} lease_duration={} "
      "renew_deadline={} retry_period={} api_timeout={}",
      kVersion, config->lease_namespace, config->lease_name, LogValue(config->identity),
      absl::FormatDuration(config->timing.lease_duration),
      absl::FormatDuration(config->timing.renew_deadline),
      absl::FormatDuration(config->timing.retry_period), absl::FormatDuration(config->api_timeout));
  for (const std::string& warning : ConfigWarnings(*config)) {
    spdlog::warn("event=config_warning warning={}", LogValue(warning));
  }

  if (run_mode) {
    return RunCommand(*config, *std::move(rest), *std::move(run_options), shutdown_signals);
  }
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(*config, *std::move(rest));
  if (!daemon.ok()) {
    spdlog::error("event=start_failed error={} next=exit", LogValue(daemon.status().ToString()));
    return 1;
  }
  const int sig = AwaitShutdownSignal(shutdown_signals);
  spdlog::info(
      "event=shutdown signal={} release={} next=\"step down, release once every promise is "
      "acknowledged or has lapsed, close servers\"",
      sig == SIGTERM  ? "SIGTERM"
      : sig == SIGINT ? "SIGINT"
                      : "SIGHUP",
      config->release_on_shutdown);
  (*daemon)->Stop(config->shutdown_grace);
  spdlog::info("event=exited");
  return 0;
}

}  // namespace
}  // namespace baton

int main(int argc, char** argv) { return baton::Main(argc, argv); }

// SidecarConfig: everything the baton daemon is told at start-up, as typed
// values. main() fills it from flags and the environment; nothing else reads
// flags. Validation lives here so that bad start-up config fails fast with a
// message that names the flags involved.
#ifndef BATON_SIDECAR_MAIN_CONFIG_H_
#define BATON_SIDECAR_MAIN_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sidecar/common/log.h"
#include "sidecar/election/timing.h"

namespace baton {

// Checks renewDeadline < leaseDuration, retryPeriod × 1.2 < renewDeadline (the
// retry period is stretched by up to Elector::kMaxJitter, and a leader needs
// one renew attempt before its deadline) and that all are positive. InvalidArgument naming the
// flags and saying why.
absl::Status ValidateTiming(const ElectionTiming& timing);

struct SidecarConfig {
  std::string lease_name;
  std::string lease_namespace;
  std::string identity;
  ElectionTiming timing;
  std::string kubeconfig;  // empty: in-cluster config
  std::string http_addr = "127.0.0.1:4040";
  std::string grpc_addr = "127.0.0.1:4041";
  // Serves /metrics and the probe endpoints only, e.g. on the Pod IP for
  // Prometheus, without exposing /leader and Resign. Empty: none.
  std::string metrics_addr;
  bool release_on_shutdown = true;
  // Deadline of every request to the API server.
  absl::Duration api_timeout = absl::Seconds(5);
  // On SIGTERM: time allowed for the release, and again for closing servers.
  absl::Duration shutdown_grace = absl::Seconds(11);
  // GET /leader/watch: a heartbeat comment after this long without an event.
  absl::Duration sse_heartbeat = absl::Seconds(15);
  // The longest promise an unnamed reader's GET /leader, GET / or
  // GetLeadership carries (ApiContext::max_unnamed_valid_for).
  absl::Duration max_unnamed_valid_for = absl::Milliseconds(500);
  LogOptions log;
  // Record Kubernetes Events on the Lease as leadership changes.
  bool events = true;
  // --leader-label: the label this sidecar's Pod carries while it leads
  // (kube::PodLabeler); empty: none. Then the Pod is pod_namespace/pod_name.
  std::string leader_label;
  // --native-sidecar: on SIGTERM, read this Pod's status, and if every
  // application container has exited, release without waiting for promises.
  bool native_sidecar = false;
  // The Pod of --leader-label and --native-sidecar.
  std::string pod_name;
  std::string pod_namespace;
};

// The API request deadline when --api-timeout is not given: 5s, but at most
// half the renew deadline, so one hung request cannot use up a leader's
// whole renew deadline.
absl::Duration DefaultApiTimeout(const ElectionTiming& timing);

// The --shutdown-grace when it is not given: the renew deadline plus one
// second. Every promise a leader has given ends within one renew deadline
// of now, so a shutdown that waits that long for unacknowledged promises
// still has a second for the release, and ends with the Lease released
// unless the API server cannot be reached.
absl::Duration DefaultShutdownGrace(const ElectionTiming& timing);

// What is valid but probably not meant, one operator-facing line each (main
// logs them as event=config_warning): a --shutdown-grace not above
// --renew-deadline, after which a reader that named itself and does not
// acknowledge, or a watch stream, can turn a shutdown into an expiry.
std::vector<std::string> ConfigWarnings(const SidecarConfig& config);

// The raw inputs ConfigFrom turns into a SidecarConfig: flag values as given
// plus the environment and files they may default from.
struct ConfigInputs {
  std::string lease_name;
  std::string lease_namespace;  // --lease-namespace; empty if unset
  std::string identity;         // --identity; empty if unset
  ElectionTiming timing;
  std::string kubeconfig;
  std::string http_addr;
  std::string grpc_addr;
  std::string metrics_addr;
  bool release_on_shutdown = true;
  absl::Duration api_timeout = absl::ZeroDuration();     // zero: DefaultApiTimeout
  absl::Duration shutdown_grace = absl::ZeroDuration();  // zero: DefaultShutdownGrace
  absl::Duration sse_heartbeat = SidecarConfig{}.sse_heartbeat;
  absl::Duration max_unnamed_valid_for = SidecarConfig{}.max_unnamed_valid_for;
  bool events = true;
  std::string leader_label;           // --leader-label
  bool native_sidecar = false;        // --native-sidecar
  std::string log_format = "logfmt";  // --log-format
  std::string log_level = "info";     // --log-level
  std::string pod_name;               // $POD_NAME
  std::string pod_namespace;          // $POD_NAMESPACE
  // The namespace of the API client configuration: the kubeconfig context's,
  // or in a Pod the ServiceAccount namespace file's.
  std::string client_namespace;
  std::string hostname;
  std::string random_suffix;  // for the default identity
};

// Checks what the flags say on their own: --lease-name present, durations,
// addresses, timeouts, log format and level, the leader label's key. main calls it before loading
// the API client config, so a bad flag is reported first. InvalidArgument naming the flag.
absl::Status ValidateFlags(const ConfigInputs& in);

// ValidateFlags, then resolves the defaults (namespace, identity, API
// timeout, the leader label's Pod). InvalidArgument with a message meant for the operator when
// something required is missing or inconsistent.
absl::StatusOr<SidecarConfig> ConfigFrom(const ConfigInputs& in);

// `<pod name or hostname>_<suffix>`: unique per process, so a restarted
// sidecar is a new holder with a new, higher fencing token.
std::string DefaultIdentity(const std::string& pod_name, const std::string& hostname,
                            const std::string& suffix);

// The shortest --sse-heartbeat: the local API's shortest heartbeat interval
// for any watch stream (HttpServerOptions::min_watch_heartbeat).
inline constexpr absl::Duration kMinSseHeartbeat = absl::Milliseconds(100);

// The shortest --max-unnamed-valid-for: the finest step of a bounded
// promise (kBoundedDeadlineStep in sidecar/api/local_api.h).
inline constexpr absl::Duration kMinMaxUnnamedValidFor = absl::Milliseconds(1);

// Checks a listener flag by ParseListenAddress, the rule the servers bind by.
absl::Status ValidateAddress(const std::string& flag, const std::string& addr);

}  // namespace baton

#endif  // BATON_SIDECAR_MAIN_CONFIG_H_

#include "sidecar/main/config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sidecar/common/listen_address.h"
#include "sidecar/election/elector.h"
#include "sidecar/election/timing.h"
#include "sidecar/kube/pod_labeler.h"

namespace baton {

absl::Status ValidateTiming(const ElectionTiming& t) {
  const std::string values =
      absl::StrCat(" (--lease-duration=", absl::FormatDuration(t.lease_duration),
                   " --renew-deadline=", absl::FormatDuration(t.renew_deadline),
                   " --retry-period=", absl::FormatDuration(t.retry_period), ")");
  if (t.lease_duration <= absl::ZeroDuration() || t.renew_deadline <= absl::ZeroDuration() ||
      t.retry_period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lease-duration, --renew-deadline and --retry-period must all be positive", values));
  }
  if (t.lease_duration < absl::Seconds(1) ||
      t.lease_duration % absl::Seconds(1) != absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lease-duration must be a whole number of seconds: the Lease stores "
                     "leaseDurationSeconds as an integer",
                     values));
  }
  if (t.renew_deadline > SafeLeadershipFor(t.lease_duration)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--renew-deadline must be at most (--lease-duration × 0.99 − 1s) ÷ 1.01 = ",
        absl::FormatDuration(
            absl::Trunc(SafeLeadershipFor(t.lease_duration), absl::Milliseconds(1))),
        ": a leader must stop acting before any follower may take the Lease over, and "
        "client-go followers see renews at one-second resolution on clocks that may run 1 % "
        "apart",
        values));
  }
  if (t.retry_period * (1 + Elector::kMaxJitter) >= t.renew_deadline) {
    return absl::InvalidArgumentError(
        absl::StrCat("--retry-period × 1.2 (its jitter) must be shorter than --renew-deadline: a "
                     "leader needs at least one renew attempt before its deadline",
                     values));
  }
  return absl::OkStatus();
}

absl::Status ValidateAddress(const std::string& flag, const std::string& addr) {
  if (absl::StatusOr<ListenAddress> parsed = ParseListenAddress(addr); !parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", addr, ": ", parsed.status().message(), " (e.g. 127.0.0.1:4040)"));
  }
  return absl::OkStatus();
}

absl::Duration DefaultApiTimeout(const ElectionTiming& timing) {
  return std::min(absl::Seconds(5), timing.renew_deadline / 2);
}

absl::Duration DefaultShutdownGrace(const ElectionTiming& timing) {
  return timing.renew_deadline + absl::Seconds(1);
}

std::vector<std::string> ConfigWarnings(const SidecarConfig& config) {
  std::vector<std::string> warnings;
  if (config.shutdown_grace <= config.timing.renew_deadline) {
    warnings.push_back(absl::StrCat(
        "--shutdown-grace=", absl::FormatDuration(config.shutdown_grace),
        " is not above --renew-deadline=", absl::FormatDuration(config.timing.renew_deadline),
        ": a reader that named itself and does not acknowledge, or a watch stream, can hold a "
        "shutdown's release past the grace; baton then exits without releasing and the "
        "followers wait out the Lease"));
  }
  return warnings;
}

std::string DefaultIdentity(const std::string& pod_name, const std::string& hostname,
                            const std::string& suffix) {
  return absl::StrCat(pod_name.empty() ? hostname : pod_name, "_", suffix);
}

absl::Status ValidateFlags(const ConfigInputs& in) {
  if (in.lease_name.empty()) {
    return absl::InvalidArgumentError("--lease-name is required: the Lease to hold");
  }
  if (absl::Status s = ValidateTiming(in.timing); !s.ok()) return s;
  if (absl::Status s = ValidateAddress("http-addr", in.http_addr); !s.ok()) return s;
  if (absl::Status s = ValidateAddress("grpc-addr", in.grpc_addr); !s.ok()) return s;
  if (!in.metrics_addr.empty()) {
    if (absl::Status s = ValidateAddress("metrics-addr", in.metrics_addr); !s.ok()) return s;
  }
  if (in.api_timeout < absl::ZeroDuration() || in.api_timeout >= in.timing.renew_deadline) {
    return absl::InvalidArgumentError(
        absl::StrCat("--api-timeout=", absl::FormatDuration(in.api_timeout),
                     " must be positive and shorter than --renew-deadline=",
                     absl::FormatDuration(in.timing.renew_deadline)));
  }
  if (in.shutdown_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--shutdown-grace must not be negative (0 or unset: --renew-deadline + 1s)");
  }
  if (in.max_unnamed_valid_for < kMinMaxUnnamedValidFor) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-unnamed-valid-for=", absl::FormatDuration(in.max_unnamed_valid_for),
                     " must be at least ", absl::FormatDuration(kMinMaxUnnamedValidFor)));
  }
  const absl::Duration grace = in.shutdown_grace == absl::ZeroDuration()
                                   ? DefaultShutdownGrace(in.timing)
                                   : in.shutdown_grace;
  if (in.max_unnamed_valid_for >= grace) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-unnamed-valid-for=", absl::FormatDuration(in.max_unnamed_valid_for),
        " must be shorter than --shutdown-grace=", absl::FormatDuration(grace),
        ": otherwise every shutdown with an application polling GET /leader without client_id "
        "ends without releasing the Lease"));
  }
  if (in.sse_heartbeat < kMinSseHeartbeat) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sse-heartbeat=", absl::FormatDuration(in.sse_heartbeat),
                     " must be at least ", absl::FormatDuration(kMinSseHeartbeat),
                     ", the shortest heartbeat a watch stream may have"));
  }
  if (!in.leader_label.empty()) {
    if (absl::Status s = kube::ValidateLabelKey(in.leader_label); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--leader-label=", s.message()));
    }
  }
  if (absl::Status s = ParseLogFormat(in.log_format).status(); !s.ok()) return s;
  return ParseLogLevel(in.log_level).status();
}

absl::StatusOr<SidecarConfig> ConfigFrom(const ConfigInputs& in) {
  if (absl::Status s = ValidateFlags(in); !s.ok()) return s;
  SidecarConfig c;
  c.lease_name = in.lease_name;
  c.lease_namespace = in.lease_namespace;
  if (c.lease_namespace.empty()) c.lease_namespace = in.pod_namespace;
  if (c.lease_namespace.empty()) {
    c.lease_namespace = std::string(absl::StripAsciiWhitespace(in.client_namespace));
  }
  if (c.lease_namespace.empty()) {
    return absl::InvalidArgumentError(
        "--lease-namespace is required: no POD_NAMESPACE, no ServiceAccount namespace "
        "file and no namespace in the kubeconfig context");
  }
  c.identity = in.identity.empty() ? DefaultIdentity(in.pod_name, in.hostname, in.random_suffix)
                                   : in.identity;
  c.timing = in.timing;
  c.kubeconfig = in.kubeconfig;
  c.http_addr = in.http_addr;
  c.grpc_addr = in.grpc_addr;
  c.metrics_addr = in.metrics_addr;
  c.release_on_shutdown = in.release_on_shutdown;
  c.api_timeout =
      in.api_timeout == absl::ZeroDuration() ? DefaultApiTimeout(c.timing) : in.api_timeout;
  c.shutdown_grace = in.shutdown_grace == absl::ZeroDuration() ? DefaultShutdownGrace(c.timing)
                                                               : in.shutdown_grace;
  c.sse_heartbeat = in.sse_heartbeat;
  c.max_unnamed_valid_for = in.max_unnamed_valid_for;
  c.events = in.events;
  c.leader_label = in.leader_label;
  c.native_sidecar = in.native_sidecar;
  if (!c.leader_label.empty() || c.native_sidecar) {
    c.pod_name = in.pod_name;
    c.pod_namespace = in.pod_namespace.empty()
                          ? std::string(absl::StripAsciiWhitespace(in.client_namespace))
                          : in.pod_namespace;
    if (c.pod_name.empty() || c.pod_namespace.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.native_sidecar ? "--native-sidecar needs the Pod to read"
                                        : "--leader-label needs the Pod to label",
                       ": set POD_NAME (and POD_NAMESPACE outside a Pod) from the Downward API's "
                       "metadata.name and metadata.namespace"));
    }
  }
  c.log.format = *ParseLogFormat(in.log_format);
  c.log.level = *ParseLogLevel(in.log_level);
  return c;
}

}  // namespace baton

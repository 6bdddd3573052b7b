#include "sidecar/api/metrics.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sidecar/api/process_metrics.h"
#include "sidecar/common/version.h"

namespace baton {
namespace {

// Joins label values into one map key. The values come from fixed sets
// (verbs, routes, method names, numbers), none of which contain it.
constexpr char kKeySeparator = '\x1f';

std::string Key(std::initializer_list<absl::string_view> values) {
  return absl::StrJoin(values, absl::string_view(&kKeySeparator, 1));
}

std::string EscapeLabelValue(absl::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// `{a="x",b="y"}` from names and a joined key; `extra` is appended as is
// (already formatted, e.g. `le="0.5"`). Empty when there are no labels.
std::string Labels(const std::vector<absl::string_view>& names, absl::string_view key,
                   absl::string_view extra = {}) {
  std::vector<std::string> parts;
  if (!names.empty()) {
    std::vector<absl::string_view> values = absl::StrSplit(key, kKeySeparator);
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
      parts.push_back(absl::StrCat(names[i], "=\"", EscapeLabelValue(values[i]), "\""));
    }
  }
  if (!extra.empty()) parts.emplace_back(extra);
  if (parts.empty()) return "";
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

// The shortest text that reads back as the same double; Prometheus accepts
// Go's float syntax, which this is a subset of.
std::string FormatDouble(double v) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
  return std::string(buffer, result.ptr);
}

void Header(std::string& out, absl::string_view name, absl::string_view help,
            absl::string_view type) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

template <typename Map>
std::vector<std::string> SortedKeys(const Map& map) {
  std::vector<std::string> keys;
  keys.reserve(map.size());
  for (const auto& [key, unused] : map) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string CodeLabel(int code) { return code == 0 ? "error" : absl::StrCat(code); }

void RenderProcessStats(std::string& out, const ProcessStats& stats) {
  Header(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
         "counter");
  absl::StrAppend(&out, "process_cpu_seconds_total ", FormatDouble(stats.cpu_seconds), "\n");
  Header(out, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge");
  absl::StrAppend(&out, "process_resident_memory_bytes ", stats.resident_bytes, "\n");
  Header(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge");
  absl::StrAppend(&out, "process_virtual_memory_bytes ", stats.virtual_bytes, "\n");
  Header(out, "process_start_time_seconds",
         "Start time of the process since unix epoch in seconds.", "gauge");
  absl::StrAppend(&out, "process_start_time_seconds ", FormatDouble(stats.start_time_seconds),
                  "\n");
  Header(out, "process_open_fds", "Number of open file descriptors.", "gauge");
  absl::StrAppend(&out, "process_open_fds ", stats.open_fds, "\n");
  Header(out, "process_max_fds", "Maximum number of open file descriptors.", "gauge");
  absl::StrAppend(&out, "process_max_fds ", stats.max_fds, "\n");
}

}  // namespace

Metrics::Metrics(const LeadershipPublisher* publisher, const Clock* clock, MetricsOptions options)
    : publisher_(publisher), clock_(clock), options_(std::move(options)) {
  // Every series whose labels are known in advance, at zero (metrics.h).
  absl::MutexLock lock(&mu_);
  for (const char* direction : {"acquired", "lost"}) transitions_.values[direction] = 0;
  for (const char* result : {"accepted", "stale"}) acknowledgements_.values[result] = 0;
  for (const char* result : {"success", "failure"}) renews_.values[result] = 0;
  for (const char* verb : {"get", "create", "update", "watch"}) EmptyHistogram(api_latency_, verb);
  EmptyHistogram(renew_latency_, "");
}

Metrics::Histogram& Metrics::EmptyHistogram(HistogramFamily& family, const std::string& key) {
  Histogram& h = family.values[key];
  if (h.buckets.empty()) h.buckets.resize(options_.latency_buckets.size());
  return h;
}

void Metrics::Increment(CounterFamily& family, const std::string& key) { ++family.values[key]; }

void Metrics::Observe(HistogramFamily& family, const std::string& key, absl::Duration latency) {
  Histogram& h = EmptyHistogram(family, key);
  const double seconds = absl::ToDoubleSeconds(latency);
  auto bound =
      std::lower_bound(options_.latency_buckets.begin(), options_.latency_buckets.end(), seconds);
  if (bound != options_.latency_buckets.end()) {
    ++h.buckets[bound - options_.latency_buckets.begin()];
  }
  ++h.count;
  h.sum += seconds;
}

void Metrics::ObserveApiRequest(absl::string_view verb, int code, absl::Duration latency) {
  absl::MutexLock lock(&mu_);
  Increment(api_requests_, Key({verb, CodeLabel(code)}));
  Observe(api_latency_, std::string(verb), latency);
}

void Metrics::ObserveRenew(absl::Duration latency, bool ok) {
  absl::MutexLock lock(&mu_);
  Observe(renew_latency_, "", latency);
  Increment(renews_, ok ? "success" : "failure");
}

void Metrics::ObserveLeadershipAcquired() {
  absl::MutexLock lock(&mu_);
  Increment(transitions_, "acquired");
}

void Metrics::ObserveLeadershipLost() {
  absl::MutexLock lock(&mu_);
  Increment(transitions_, "lost");
}

void Metrics::ObserveSlowPath() {
  absl::MutexLock lock(&mu_);
  ++slow_paths_;
}

void Metrics::ObserveAcknowledgement(bool accepted) {
  absl::MutexLock lock(&mu_);
  Increment(acknowledgements_, accepted ? "accepted" : "stale");
}

void Metrics::ObserveHttpRequest(absl::string_view route, int code) {
  std::string key = Key({route, absl::StrCat(code)});
  absl::MutexLock lock(&mu_);
  Increment(http_requests_, key);
}

void Metrics::AddHttpConnections(int delta) {
  absl::MutexLock lock(&mu_);
  http_connections_ += delta;
}

void Metrics::ObserveGrpcRequest(absl::string_view method, int code) {
  std::string key = Key({method, absl::StrCat(code)});
  absl::MutexLock lock(&mu_);
  Increment(grpc_requests_, key);
}

void Metrics::AddWatchers(int delta) {
  absl::MutexLock lock(&mu_);
  watchers_ += delta;
}

void Metrics::RenderCounter(std::string& out, absl::string_view name, absl::string_view help,
                            const std::vector<absl::string_view>& label_names,
                            const CounterFamily& family) const {
  Header(out, name, help, "counter");
  for (const std::string& key : SortedKeys(family.values)) {
    absl::StrAppend(&out, name, Labels(label_names, key), " ", family.values.at(key), "\n");
  }
}

void Metrics::RenderHistogram(std::string& out, absl::string_view name, absl::string_view help,
                              const std::vector<absl::string_view>& label_names,
                              const HistogramFamily& family) const {
  Header(out, name, help, "histogram");
  for (const std::string& key : SortedKeys(family.values)) {
    const Histogram& h = family.values.at(key);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < options_.latency_buckets.size(); ++i) {
      cumulative += h.buckets[i];
      const std::string le = absl::StrCat("le=\"", FormatDouble(options_.latency_buckets[i]), "\"");
      absl::StrAppend(&out, name, "_bucket", Labels(label_names, key, le), " ", cumulative, "\n");
    }
    absl::StrAppend(&out, name, "_bucket", Labels(label_names, key, "le=\"+Inf\""), " ", h.count,
                    "\n");
    absl::StrAppend(&out, name, "_sum", Labels(label_names, key), " ", FormatDouble(h.sum), "\n");
    absl::StrAppend(&out, name, "_count", Labels(label_names, key), " ", h.count, "\n");
  }
}

std::string Metrics::Render() const {
  const Leadership snapshot = publisher_->Current().leadership;
  const MonoTime now = clock_->Monotonic();
  const std::string lease = absl::StrCat("{name=\"", EscapeLabelValue(snapshot.lease_name), "\"}");

  std::string out;
  Header(out, "leader_election_master_status",
         "1 while this sidecar leads the Lease named by the label, 0 otherwise.", "gauge");
  absl::StrAppend(&out, "leader_election_master_status", lease, " ", snapshot.IsLeader(now) ? 1 : 0,
                  "\n");
  Header(out, "baton_fencing_token",
         "Fencing token: leaseTransitions as acquired while leading, else as last observed.",
         "gauge");
  absl::StrAppend(&out, "baton_fencing_token", lease, " ", snapshot.fencing_token, "\n");
  Header(out, "baton_leader_valid_for_seconds",
         "Remaining guaranteed leadership in seconds; 0 when not leader.", "gauge");
  absl::StrAppend(&out, "baton_leader_valid_for_seconds", lease, " ",
                  FormatDouble(absl::ToDoubleSeconds(snapshot.ValidFor(now))), "\n");
  const std::optional<MonoTime> promised =
      snapshot.holding ? publisher_->OutstandingUntil(snapshot.fencing_token, now) : std::nullopt;
  Header(out, "baton_promises_outstanding_seconds",
         "Until the last promise of this term neither acknowledged nor lapsed ends, in seconds: "
         "how long a step-down would wait before the release. 0 when there is none.",
         "gauge");
  absl::StrAppend(&out, "baton_promises_outstanding_seconds", lease, " ",
                  FormatDouble(promised ? absl::ToDoubleSeconds(*promised - now) : 0), "\n");
  Header(out, "baton_lease_observed",
         "1 once the Lease (or its absence) has been read from the API server.", "gauge");
  absl::StrAppend(&out, "baton_lease_observed", lease, " ", snapshot.observed ? 1 : 0, "\n");
  Header(out, "baton_build_info", "Always 1; the label carries the baton version.", "gauge");
  absl::StrAppend(&out, "baton_build_info{version=\"", EscapeLabelValue(kVersion), "\"} 1\n");

  if (absl::StatusOr<ProcessStats> process = ReadProcessStats(); process.ok()) {
    RenderProcessStats(out, *process);
  }

  absl::MutexLock lock(&mu_);
  Header(out, "leader_election_slowpath_total",
         "Renews of the cached Lease that met a changed Lease, so the leader re-read it "
         "(client-go's slow path).",
         "counter");
  absl::StrAppend(&out, "leader_election_slowpath_total", lease, " ", slow_paths_, "\n");
  RenderCounter(out, "baton_leadership_transitions_total",
                "Times this sidecar became leader (acquired) or stopped leading (lost).",
                {"direction"}, transitions_);
  RenderCounter(out, "baton_acknowledgements_total",
                "Step-down acknowledgements by clients: accepted (they voided outstanding "
                "promises of the current term) or stale.",
                {"result"}, acknowledgements_);
  RenderCounter(out, "baton_kube_api_requests_total",
                "Requests to the Kubernetes API server by verb and HTTP status (error: no "
                "response).",
                {"verb", "code"}, api_requests_);
  RenderHistogram(out, "baton_kube_api_request_duration_seconds",
                  "Latency of requests to the Kubernetes API server.", {"verb"}, api_latency_);
  RenderHistogram(out, "baton_renew_duration_seconds", "Latency of the leader's renew attempts.",
                  {}, renew_latency_);
  RenderCounter(out, "baton_renews_total", "Renew attempts by the leader, by result.", {"result"},
                renews_);
  RenderCounter(out, "baton_http_requests_total", "Local HTTP API requests by route and status.",
                {"route", "code"}, http_requests_);
  Header(out, "baton_http_connections", "Open local HTTP connections.", "gauge");
  absl::StrAppend(&out, "baton_http_connections ", http_connections_, "\n");
  RenderCounter(out, "baton_grpc_requests_total",
                "Finished local gRPC calls by method and status code.", {"method", "code"},
                grpc_requests_);
  Header(out, "baton_grpc_watchers", "Open WatchLeadership streams.", "gauge");
  absl::StrAppend(&out, "baton_grpc_watchers ", watchers_, "\n");
  return out;
}

}  // namespace baton

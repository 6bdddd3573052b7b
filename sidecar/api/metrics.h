// Metrics: baton's counters, gauges and histograms, and their rendering in the
// Prometheus text exposition format (version 0.0.4) for GET /metrics.
//
// The daemon and the servers record events through the plain Observe*/Add*
// methods below; nothing is exported until a scrape calls Render(). Gauges
// that describe leadership are not stored at all: Render() evaluates them from
// the published snapshot and the clock at scrape time, so
// `leader_election_master_status` drops to 0 the moment the guarantee runs
// out, as GET /leader does.
//
// Exported families (label values are escaped; cardinality is bounded by the
// callers: verbs, routes and methods come from fixed sets). Every series
// whose labels are known in advance exists, at zero, from the first scrape,
// so alerts on rate(...) have a series to evaluate; only the `code` labels
// appear with the first answer of that code:
//   leader_election_master_status{name}            gauge   client-go's name
//   leader_election_slowpath_total{name}           counter client-go's name
//   baton_fencing_token{name}                      gauge
//   baton_leader_valid_for_seconds{name}           gauge
//   baton_promises_outstanding_seconds{name}       gauge
//   baton_lease_observed{name}                     gauge
//   baton_leadership_transitions_total{direction}  counter acquired|lost
//   baton_acknowledgements_total{result}           counter accepted|stale
//   baton_kube_api_requests_total{verb,code}       counter
//   baton_kube_api_request_duration_seconds{verb}  histogram get|create|update|watch
//   baton_renew_duration_seconds                   histogram
//   baton_renews_total{result}                     counter success|failure
//   baton_http_requests_total{route,code}          counter
//   baton_http_connections                         gauge
//   baton_grpc_requests_total{method,code}         counter
//   baton_grpc_watchers                            gauge
//   baton_build_info{version}                      gauge (always 1)
//   process_cpu_seconds_total, process_resident_memory_bytes,
//   process_virtual_memory_bytes, process_start_time_seconds,
//   process_open_fds, process_max_fds               the standard process set,
//                                                   read from /proc at scrape
#ifndef BATON_SIDECAR_API_METRICS_H_
#define BATON_SIDECAR_API_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"

namespace baton {

struct MetricsOptions {
  // Upper bounds (seconds) of the latency histogram buckets; +Inf is implied.
  // Spans a loopback API server (ms) to a renew that hits its deadline (10s).
  std::vector<double> latency_buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,    1,     2.5,  5,     10};
};

// Thread-safe: every method may be called from any thread. Recording takes a
// short internal lock and never does I/O or calls out.
class Metrics {
 public:
  // `publisher` and `clock` must outlive this object; they are read only by
  // Render().
  Metrics(const LeadershipPublisher* publisher, const Clock* clock, MetricsOptions options = {});

  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One request to the Kubernetes API server. `verb` is the Kubernetes verb
  // ("get", "create", "update", "watch"); `code` the HTTP status, or 0 when no
  // response arrived (exported as code="error").
  void ObserveApiRequest(absl::string_view verb, int code, absl::Duration latency);

  // One renew attempt by the leader, successful or not, and how long it took.
  void ObserveRenew(absl::Duration latency, bool ok);

  // This sidecar became leader / stopped being leader.
  void ObserveLeadershipAcquired();
  void ObserveLeadershipLost();

  // The leader's renew of its cached record met a changed Lease and it
  // re-read the Lease (ElectionListener::OnSlowPath).
  void ObserveSlowPath();

  // A client acknowledged the end of its leader work (POST /leader/ack, the
  // gRPC Acknowledge, `baton run`): `accepted` when it voided outstanding
  // promises of the current term, otherwise it was stale (late, repeated,
  // or about another term).
  void ObserveAcknowledgement(bool accepted);

  // One HTTP request answered. `route` is the matched route ("/leader", ...),
  // or "other" for anything unmatched, so the label set stays bounded.
  void ObserveHttpRequest(absl::string_view route, int code);
  // Open HTTP connections went up or down by `delta`.
  void AddHttpConnections(int delta);

  // One gRPC call finished. `method` is the short method name
  // ("GetLeadership"); `code` the grpc::StatusCode as an integer.
  void ObserveGrpcRequest(absl::string_view method, int code);
  // Open WatchLeadership streams went up or down by `delta`.
  void AddWatchers(int delta);

  // All families in the Prometheus text format, with # HELP and # TYPE lines.
  std::string Render() const;

  // Content-Type of Render()'s output.
  static constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

 private:
  // A counter family: label values (joined) → count.
  struct CounterFamily {
    absl::flat_hash_map<std::string, uint64_t> values;
  };
  struct Histogram {
    std::vector<uint64_t> buckets;  // per upper bound, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  struct HistogramFamily {
    absl::flat_hash_map<std::string, Histogram> values;
  };

  void Increment(CounterFamily& family, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The histogram at `key`, created with every bucket at zero if missing.
  Histogram& EmptyHistogram(HistogramFamily& family, const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Observe(HistogramFamily& family, const std::string& key, absl::Duration latency)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RenderCounter(std::string& out, absl::string_view name, absl::string_view help,
                     const std::vector<absl::string_view>& label_names,
                     const CounterFamily& family) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RenderHistogram(std::string& out, absl::string_view name, absl::string_view help,
                       const std::vector<absl::string_view>& label_names,
                       const HistogramFamily& family) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LeadershipPublisher* const publisher_;
  const Clock* const clock_;
  const MetricsOptions options_;

  mutable absl::Mutex mu_;
  CounterFamily transitions_ ABSL_GUARDED_BY(mu_);
  uint64_t slow_paths_ ABSL_GUARDED_BY(mu_) = 0;
  CounterFamily acknowledgements_ ABSL_GUARDED_BY(mu_);
  CounterFamily api_requests_ ABSL_GUARDED_BY(mu_);
  HistogramFamily api_latency_ ABSL_GUARDED_BY(mu_);
  HistogramFamily renew_latency_ ABSL_GUARDED_BY(mu_);
  CounterFamily renews_ ABSL_GUARDED_BY(mu_);
  CounterFamily http_requests_ ABSL_GUARDED_BY(mu_);
  CounterFamily grpc_requests_ ABSL_GUARDED_BY(mu_);
  int64_t http_connections_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t watchers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_METRICS_H_

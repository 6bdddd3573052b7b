// api_bench_server: the local API servers alone, serving a fixed published
// snapshot, for benchmarks (bench/local_api.sh) and the Prometheus-parser
// test. No election and no API server: this process "leads" its Lease until
// it is asked to resign.
//
// Resign (gRPC or POST /resign) hands leadership over instead of stepping
// down: it publishes a snapshot with the other holder (this process, or
// "bench-peer"), a fencing token one higher, and acquire_time set to the wall
// clock just before publishing, so a watcher can measure publish-to-receipt
// latency as (receipt wall time - acquireTime) on the same machine.
//
// On SIGINT/SIGTERM it shuts down in the daemon's order: publish
// stepping_down, then close the servers.
//
//   api_bench_server --http_addr=127.0.0.1:0 --grpc_addr=127.0.0.1:0
//       --ready_file=/tmp/ports     (writes "<http> <grpc> <metrics>" once listening)
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/grpc_server.h"
#include "sidecar/api/http_server.h"
#include "sidecar/api/metrics.h"
#include "sidecar/common/clock.h"
#include "sidecar/common/log.h"
#include "sidecar/election/leadership.h"

ABSL_FLAG(std::string, http_addr, "127.0.0.1:0", "HTTP API address");
ABSL_FLAG(std::string, grpc_addr, "127.0.0.1:0", "gRPC address");
ABSL_FLAG(std::string, metrics_addr, "", "probes-and-metrics address; empty: none");
ABSL_FLAG(int, http_threads, 1, "HTTP server threads");
ABSL_FLAG(int, max_watchers, 2000, "WatchLeadership and GET /leader/watch stream limit");
ABSL_FLAG(int, max_connections, 512, "HTTP connection limit");
ABSL_FLAG(int, fanout_threads, baton::GrpcServerOptions().fanout_threads,
          "threads starting the writes of a WatchLeadership fan-out");
ABSL_FLAG(std::string, ready_file, "", "where to write the bound ports once listening");

namespace baton {
namespace {

constexpr char kSelf[] = "bench-self";
constexpr char kPeer[] = "bench-peer";
// Long enough that the fixed snapshot never expires during a benchmark.
constexpr absl::Duration kGuarantee = absl::Hours(24);

Leadership Snapshot(const Clock& clock, bool leading, int64_t token) {
  Leadership l;
  l.identity = kSelf;
  l.lease_name = "bench";
  l.lease_namespace = "default";
  l.lease_uid = "00000000-0000-0000-0000-000000000001";
  l.observed = true;
  l.holder_identity = leading ? kSelf : kPeer;
  l.holding = leading;
  l.leader_until = clock.Monotonic() + kGuarantee;
  l.fencing_token = token;
  l.lease_duration_seconds = 15;
  l.acquire_time = clock.Wall();
  l.renew_time = clock.Wall();
  return l;
}

int Run() {
  InitLogging({.level = spdlog::level::warn});
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex deadlock
  // detection on: every lock then updates a global lock graph under a global
  // lock. Measure what production runs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Clock* clock = SystemClock();
  LeadershipPublisher publisher(Snapshot(*clock, true, 1));
  Metrics metrics(&publisher, clock);

  absl::Mutex handover_mu;
  ApiContext context;
  context.publisher = &publisher;
  context.clock = clock;
  context.metrics = &metrics;
  context.hooks.resign = [&] {
    absl::MutexLock lock(&handover_mu);
    const Leadership current = publisher.Current().leadership;
    publisher.Publish(Snapshot(*clock, !current.holding, current.fencing_token + 1));
    return absl::OkStatus();
  };

  HttpServerOptions http_options;
  http_options.address = absl::GetFlag(FLAGS_http_addr);
  http_options.threads = absl::GetFlag(FLAGS_http_threads);
  http_options.max_connections = absl::GetFlag(FLAGS_max_connections);
  http_options.max_watchers = absl::GetFlag(FLAGS_max_watchers);
  HttpServer http(http_options, &context);

  std::unique_ptr<HttpServer> probes;
  if (!absl::GetFlag(FLAGS_metrics_addr).empty()) {
    HttpServerOptions probe_options = http_options;
    probe_options.address = absl::GetFlag(FLAGS_metrics_addr);
    probe_options.routes = HttpRoutes::kProbesAndMetrics;
    probe_options.threads = 1;
    probes = std::make_unique<HttpServer>(probe_options, &context);
  }

  GrpcServerOptions grpc_options;
  grpc_options.address = absl::GetFlag(FLAGS_grpc_addr);
  grpc_options.max_watchers = absl::GetFlag(FLAGS_max_watchers);
  grpc_options.fanout_threads = absl::GetFlag(FLAGS_fanout_threads);
  GrpcServer grpc(grpc_options, &context);

  // Block the shutdown signals before any server thread exists, so they all
  // inherit the mask and only sigwait below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  for (const absl::Status& status :
       {http.Start(), grpc.Start(), probes ? probes->Start() : absl::OkStatus()}) {
    if (!status.ok()) {
      std::fprintf(stderr, "api_bench_server: %s\n", std::string(status.message()).c_str());
      return 1;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_ready_file); !path.empty()) {
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << http.port() << " " << grpc.port() << " " << (probes ? probes->port() : 0)
                       << "\n";
    std::rename(tmp.c_str(), path.c_str());
  }

  int signal = 0;
  sigwait(&signals, &signal);
  Leadership last = publisher.Current().leadership;
  last.stepping_down = true;
  publisher.Publish(last);
  const MonoTime deadline = clock->Monotonic() + absl::Seconds(2);
  grpc.Shutdown(deadline);
  http.Shutdown(deadline);
  if (probes) probes->Shutdown(deadline);
  return 0;
}

}  // namespace
}  // namespace baton

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return baton::Run();
}

// GrpcServer: baton's gRPC server. Serves baton.v1.LeaderElection
// (LeaderElectionService) and the standard grpc.health.v1.Health service
// (grpc++'s default implementation) with these service names:
//
//   "leader"  SERVING only while this pod leads (for a Kubernetes `grpc:`
//             readinessProbe that routes a Service to the leader)
//   ""        SERVING while the sidecar is live (ApiHooks::liveness)
//   "ready"   SERVING while the sidecar is ready (ApiHooks::readiness)
//
// Health is pushed, not computed per call, so a refresh thread owned by the
// server keeps it current. That thread wakes when the published snapshot
// changes (it subscribes to the LeadershipPublisher; the subscription callback
// only sets a flag, never blocks the election loop), when the current
// leadership guarantee runs out, when a watcher's heartbeat is due, and at
// least every refresh_interval. Each wake re-evaluates leadership at that
// moment, updates the health statuses and drives the watch streams
// (LeaderElectionService::Refresh).
//
// Shutdown order (the daemon's): publish stepping_down → watchers receive it
// → release the Lease → Shutdown(deadline), which sends streams whatever they
// are still owed and ends them with OK.
#ifndef BATON_SIDECAR_API_GRPC_SERVER_H_
#define BATON_SIDECAR_API_GRPC_SERVER_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/leader_election_service.h"

namespace baton {

struct GrpcServerOptions {
  // "host:port" as gRPC spells it; port 0 picks a free port (see port()).
  std::string address = "127.0.0.1:4041";
  // WatchLeadership streams beyond which new ones get RESOURCE_EXHAUSTED.
  int max_watchers = 1024;
  // Requested heartbeat intervals below this are raised to it.
  absl::Duration min_heartbeat_interval = absl::Milliseconds(100);
  // Threads that start the writes of a large fan-out in parallel (see
  // LeaderElectionServiceOptions::fanout_threads).
  int fanout_threads = 2;
  // The refresh thread re-evaluates health and leadership at least this
  // often, even with no change published.
  absl::Duration refresh_interval = absl::Seconds(1);
  // Requests are empty or a Duration; anything bigger is refused.
  int max_receive_message_bytes = 4 * 1024;
  // HTTP/2 keepalive pings on quiet connections find watchers whose peer
  // vanished without closing the connection.
  absl::Duration keepalive_time = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
};

// Health service names.
inline constexpr char kHealthServiceLeader[] = "leader";
inline constexpr char kHealthServiceReady[] = "ready";

// Thread-safe. Start at most once. Start enables grpc++'s default health
// service process-wide (grpc::EnableDefaultHealthCheckService), which is not
// thread-safe against other gRPC servers being built at the same moment.
class GrpcServer {
 public:
  // `context` must outlive the server.
  GrpcServer(GrpcServerOptions options, const ApiContext* context);
  // Shuts down (deadline: now) if Shutdown was not called.
  ~GrpcServer();

  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds and starts serving. Unavailable if the address cannot be bound.
  absl::Status Start();

  // The bound port; 0 before Start succeeds.
  int port() const;

  // Refuses new streams, sends every stream what it is owed, ends streams
  // with OK, marks all health statuses NOT_SERVING, waits for calls to end
  // until `deadline` (then cancels the rest), and stops. Idempotent; blocks.
  void Shutdown(absl::Time deadline);

 private:
  void RefreshLoop();
  // Re-evaluates and pushes the health statuses; returns how long until the
  // current leadership guarantee runs out (InfiniteDuration if not leader).
  absl::Duration UpdateHealth();

  const GrpcServerOptions options_;
  const ApiContext* const context_;
  LeaderElectionService service_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> port_{0};
  int subscription_ = 0;
  std::thread refresh_thread_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;

  absl::Mutex mu_;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;

  // Touched by the refresh thread only (and by Shutdown after joining it).
  struct HealthState {
    bool live = false;
    bool ready = false;
    bool leader = false;
  };
  std::optional<HealthState> health_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_GRPC_SERVER_H_

// GrpcServer: baton's gRPC server. Serves baton.v1.LeaderElection
// (LeaderElectionService) and the standard grpc.health.v1.Health service
// (HealthService: "leader", "" and "ready", each computed when asked).
//
// The watch streams of both services are driven by a WatchRefresher owned by
// the server (watch_refresher.h): it wakes when the published snapshot
// changes, when the current leadership guarantee runs out, when a watcher's
// heartbeat is due, and at least every refresh_interval (which is how health
// Watch streams of "" and "ready" notice the daemon's hooks change).
//
// Limits, all from GrpcServerOptions: watch streams per service, request
// size, concurrent streams per connection, a memory quota for all
// connections, and connection idle time and age; keepalive pings find peers
// that vanished.
//
// Shutdown order (the daemon's): publish stepping_down → watchers receive it
// → release the Lease → Shutdown(deadline), which sends streams whatever they
// are still owed and ends them with OK.
#ifndef BATON_SIDECAR_API_GRPC_SERVER_H_
#define BATON_SIDECAR_API_GRPC_SERVER_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/health_service.h"
#include "sidecar/api/leader_election_service.h"
#include "sidecar/api/watch_refresher.h"

namespace baton {

struct GrpcServerOptions {
  // "host:port" as gRPC spells it; port 0 picks a free port (see port()).
  std::string address = "127.0.0.1:4041";
  // WatchLeadership streams beyond which new ones get RESOURCE_EXHAUSTED.
  int max_watchers = 1024;
  // grpc.health.v1.Health/Watch streams beyond which new ones get
  // RESOURCE_EXHAUSTED (probes use Check; Watch is for the odd tool).
  int max_health_watchers = 64;
  // Requested heartbeat intervals below this are raised to it.
  absl::Duration min_heartbeat_interval = absl::Milliseconds(100);
  // Threads that start the writes of a large fan-out in parallel (see
  // LeaderElectionServiceOptions::fanout_threads).
  int fanout_threads = 2;
  // The refresher looks at the state at least this often, even with no
  // change published.
  absl::Duration refresh_interval = absl::Seconds(1);
  // Requests are empty, a Duration or a short name; anything bigger is
  // refused.
  int max_receive_message_bytes = 4 * 1024;
  // Streams one connection may have open at once (HTTP/2
  // SETTINGS_MAX_CONCURRENT_STREAMS; the client queues any beyond): room for
  // every watch stream of one application process plus unary calls.
  int max_concurrent_streams_per_connection = 1024 + 64;
  // Memory all connections' buffers may use together (a grpc::ResourceQuota);
  // under pressure gRPC shrinks buffers and closes idle connections first.
  size_t memory_quota_bytes = 64 << 20;
  // A connection with no call open for this long is closed (GOAWAY).
  absl::Duration max_connection_idle = absl::Minutes(5);
  // A connection older than this takes no new calls (GOAWAY); the client
  // opens another. Calls in progress may continue for
  // max_connection_age_grace (infinite: a WatchLeadership stream is never
  // cut, so an application's leader work is not cancelled by it).
  absl::Duration max_connection_age = absl::Minutes(30);
  absl::Duration max_connection_age_grace = absl::InfiniteDuration();
  // HTTP/2 keepalive pings on quiet connections find watchers whose peer
  // vanished without closing the connection.
  absl::Duration keepalive_time = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
};

// Thread-safe. Start at most once.
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

  // Refuses new streams, marks every health service NOT_SERVING, sends every
  // stream what it is owed, ends streams with OK, waits for calls to end
  // until `deadline` on the context's wait_clock (then cancels the rest), and
  // stops. Idempotent; blocks.
  void Shutdown(MonoTime deadline);

 private:
  // Refreshes every watch stream; returns how long until the next heartbeat
  // is due.
  absl::Duration RefreshAll();

  const GrpcServerOptions options_;
  const ApiContext* const context_;
  LeaderElectionService service_;
  HealthService health_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<int> port_{0};
  WatchRefresher refresher_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_GRPC_SERVER_H_

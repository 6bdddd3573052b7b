// HealthService: baton's implementation of the standard gRPC health service,
// grpc.health.v1.Health (proto/grpc/health/v1/health.proto), for these
// service names:
//
//   "leader"  SERVING only while this pod leads (for a Kubernetes `grpc:`
//             readinessProbe that routes a Service to the leader); Check only
//   ""        SERVING while the sidecar is live (ApiHooks::liveness)
//   "ready"   SERVING while the sidecar is ready (ApiHooks::readiness)
//
// Check computes the status at the moment it is asked, from the hooks, the
// published snapshot and the clock, like GET /leader: a leader paused past its
// renew deadline answers NOT_SERVING on the first Check after it wakes. Any
// other name is NOT_FOUND, as the protocol says.
//
// Watch streams are WatchStreams (watch_streams.h), driven by the owner
// (GrpcServer) through Refresh(): a stream is sent its service's status at
// once, then again whenever it differs from the last one sent. "" and "ready"
// come from the daemon's hooks, so the owner's periodic refresh is what
// notices them. For an unknown name the status is SERVICE_UNKNOWN and the
// stream stays open, as the protocol says.
//
// A Watch of "leader" is refused with FAILED_PRECONDITION. A Watch message
// carries no deadline: SERVING holds until the next message, and a sidecar
// that is paused, or cut off from its consumer, sends none. So a leader
// paused past its promises would go on being SERVING to its watchers while
// another pod leads: two leaders on this surface. A Check is answered when
// asked, and its caller's deadline ends the answer of a sidecar that does not
// answer. (grpc's client-side health checking treats the refusal as
// unhealthy and retries with backoff; UNIMPLEMENTED would make it treat the
// pod as healthy.)
//
// Once BeginShutdown has been called every service is NOT_SERVING.
#ifndef BATON_SIDECAR_API_HEALTH_SERVICE_H_
#define BATON_SIDECAR_API_HEALTH_SERVICE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/watch_streams.h"

namespace baton {

// Health service names ("" is the third).
inline constexpr char kHealthServiceLeader[] = "leader";
inline constexpr char kHealthServiceReady[] = "ready";

// Thread-safe. The RPC handlers are called by grpc++; Refresh, BeginShutdown
// and FinishAll by the owner from any thread. The owner must shut the
// grpc::Server down (which waits for every stream to end) before destroying
// the service.
class HealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  using Response = grpc::health::v1::HealthCheckResponse;
  using Status = Response::ServingStatus;

  // `context` must outlive the service. Watch streams beyond `max_watchers`
  // get RESOURCE_EXHAUSTED.
  HealthService(int max_watchers, const ApiContext* context);

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  Response* response) override;
  grpc::ServerWriteReactor<Response>* Watch(
      grpc::CallbackServerContext* context,
      const grpc::health::v1::HealthCheckRequest* request) override;

  // WatchStreams::Refresh of the Watch streams. Never blocks on a client.
  void Refresh() { watches_.Refresh(); }

  // From now on every service is NOT_SERVING, for Check and Watch alike.
  void BeginShutdown() { shutting_down_ = true; }

  // WatchStreams::FinishAll. Call BeginShutdown and Refresh first, so the
  // streams are told NOT_SERVING before they end.
  void FinishAll() { watches_.FinishAll(); }

  // Open Watch streams.
  int watchers() const { return watches_.size(); }

 private:
  // The services served, in a fixed order: "", "ready", "leader"; the
  // first kWatchable of them can be watched.
  static constexpr size_t kServices = 3;
  static constexpr size_t kWatchable = 2;
  // The position of `service` in that order; nullopt if it is not served.
  static std::optional<size_t> IndexOf(const std::string& service);
  // The statuses of every watchable service at one instant, in that order.
  using Statuses = std::array<Status, kWatchable>;

  // What Watch streams watch (a WatchStreams Source). A stream's param is its
  // service name.
  class WatchSource {
   public:
    using Response = HealthService::Response;
    using Key = Status;
    using Param = std::string;  // the service watched

    class Round {
     public:
      explicit Round(Statuses statuses) : statuses_(statuses) {}
      // The status the Round saw; SERVICE_UNKNOWN for a name not served.
      // Never asked for "leader", whose streams are refused.
      Key Probe(const std::string& service) const;
      WatchAnswer<Response, Key> Answer(const std::string& service,
                                        absl::FunctionRef<WatchReason(const Key&)> reason_for);

     private:
      const Statuses statuses_;
    };

    explicit WatchSource(const HealthService* service) : service_(service) {}
    Round NewRound() const;

   private:
    const HealthService* const service_;
  };

  // The status of the service at `index` now (NOT_SERVING once shutting
  // down).
  Status StatusNow(size_t index) const;

  const ApiContext* const context_;
  std::atomic<bool> shutting_down_{false};
  const WatchSource source_;
  WatchStreams<WatchSource> watches_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_HEALTH_SERVICE_H_

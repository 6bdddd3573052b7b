// ApiContext: what the local API servers (HTTP and gRPC) read and call, handed
// to both by the daemon.
//
// The servers answer only from the published Leadership snapshot, the clock
// and these hooks; none of them may wait on the API server, so an answer never
// blocks on the network.
#ifndef BATON_SIDECAR_API_API_CONTEXT_H_
#define BATON_SIDECAR_API_API_CONTEXT_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "sidecar/api/metrics.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"

namespace baton {

// Callbacks into the daemon. Each is called on a server thread (HTTP, gRPC or
// the gRPC server's refresh thread), possibly from several threads at once: it
// must be thread-safe, return within microseconds-to-milliseconds, never block
// on I/O, and never call back into the servers.
struct ApiHooks {
  // Liveness (GET /healthz; gRPC health service ""): OK while the election loop
  // is alive and its renews are not overdue; otherwise an error whose message
  // is a one-line reason. Unset: always live.
  std::function<absl::Status()> liveness;
  // Readiness (GET /readyz; gRPC health service "ready"): OK once the Lease has
  // been observed and the API server is reachable; otherwise an error whose
  // message is a one-line reason. Unset: ready once the snapshot says the
  // Lease was observed.
  std::function<absl::Status()> readiness;
  // Resign (gRPC Resign; HTTP POST /resign): stop reporting leader and start
  // the step-down handshake. On OK the published snapshot must already say
  // stepping_down (or not holding), so the answer shows is_leader=false; the
  // release itself happens on the election loop once the promises are
  // settled, never here: it must not wait for the loop. Called whether or
  // not this sidecar leads (it should then be a no-op returning OK). Unset:
  // resigning is not offered (gRPC UNIMPLEMENTED, HTTP 501).
  std::function<absl::Status()> resign;
  // Acknowledge (gRPC AcknowledgeStepDown; HTTP POST /leader/ack): a reader
  // (client_id already validated) has stopped acting on what it was told
  // (Acknowledgement). Voids the promises it covers
  // (LeadershipPublisher::Acknowledge) and lets a pending release go ahead;
  // returns whether that settled the reader. Unset: the servers call
  // LeadershipPublisher::Acknowledge themselves.
  std::function<bool(const Acknowledgement& ack)> acknowledge;
};

// Everything the servers depend on. Pointers are not owned and must outlive
// the servers.
struct ApiContext {
  LeadershipPublisher* publisher = nullptr;  // required
  // What answers are computed on: validity, is_leader, promise expiry.
  const Clock* clock = nullptr;  // required
  // What the servers' own waits run on: the watch refresher's period and
  // a shutdown's deadline. Tests keep it real while they fake `clock`.
  const Clock* wait_clock = SystemClock();
  Metrics* metrics = nullptr;  // required
  ApiHooks hooks;
  // The longest promise a unary answer (GET /leader, GET /, GetLeadership)
  // to a reader that names neither itself nor a bound carries
  // (--max-unnamed-valid-for): such a reader cannot acknowledge, so a
  // step-down waits until its last promise lapses. Infinite: as long as the
  // sidecar can promise.
  absl::Duration max_unnamed_valid_for = absl::InfiniteDuration();
};

// The liveness / readiness verdicts, applying the defaults documented on
// ApiHooks. Thread-safe.
absl::Status CheckLiveness(const ApiContext& context);
absl::Status CheckReadiness(const ApiContext& context);

}  // namespace baton

#endif  // BATON_SIDECAR_API_API_CONTEXT_H_

// LeaderElectionService: the baton.v1.LeaderElection gRPC service
// (GetLeadership, WatchLeadership, Resign, AcknowledgeStepDown) on grpc++'s
// callback API, so a thousand open WatchLeadership streams cost a thousand
// small objects, not a thousand threads.
//
// Every message that may say leader (a GetLeadership answer, each watch
// message: initial, changed or heartbeat) is built, at the moment it is
// built, from the snapshot LeadershipPublisher::Answer returns for the
// request's client_id, so its promise is on the ledger before it is sent and
// a step-down that began earlier is never contradicted. A malformed
// client_id (not 1-64 chars of [A-Za-z0-9._-]) is INVALID_ARGUMENT.
//
// Watch streams are driven from outside: the owner (GrpcServer) calls
// Refresh() whenever the published snapshot changes and periodically. Refresh
// looks at the current state once, at that moment, and sends it to every
// stream whose last message differs in holder, fencing token, is_leader,
// stepping_down, observed or Lease uid, plus a heartbeat to streams whose
// interval is due. It never waits for a client: a stream still writing is
// marked stale and gets the newest state when its write completes, so a slow
// reader sees the latest state, not a backlog. Renew-only changes (renew_time)
// are not sent.
//
// is_leader can turn false with time alone (the renew deadline passes with no
// new snapshot). Streams see that because (a) the election loop publishes a
// non-holding snapshot when it happens, and (b) as a backstop GrpcServer also
// calls Refresh() at the moment the current snapshot's guarantee runs out.
//
// Resign calls ApiHooks::resign, which only begins the step-down: the handler
// never waits for the release.
#ifndef BATON_SIDECAR_API_LEADER_ELECTION_SERVICE_H_
#define BATON_SIDECAR_API_LEADER_ELECTION_SERVICE_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/fanout_workers.h"

namespace baton {

struct LeaderElectionServiceOptions {
  // Open WatchLeadership streams beyond which new ones get RESOURCE_EXHAUSTED.
  int max_watchers = 1024;
  // Requested heartbeat intervals below this are raised to it.
  absl::Duration min_heartbeat_interval = absl::Milliseconds(100);
  // Threads (the refresh thread included) that start the writes of one large
  // fan-out in parallel. Each write costs microseconds of transport work;
  // with 2, a handover reaches 1,000 streams in about half the time.
  int fanout_threads = 2;
};

// Thread-safe. The RPC handlers are called by grpc++; Refresh and FinishAll
// by the owner from any thread. The owner must shut the grpc::Server down
// (which waits for every stream to end) before destroying the service.
class LeaderElectionService final : public v1::LeaderElection::CallbackService {
 public:
  // `context` must outlive the service.
  LeaderElectionService(LeaderElectionServiceOptions options, const ApiContext* context);
  ~LeaderElectionService() override;

  grpc::ServerUnaryReactor* GetLeadership(grpc::CallbackServerContext* context,
                                          const v1::GetLeadershipRequest* request,
                                          v1::Leadership* response) override;
  grpc::ServerWriteReactor<v1::WatchLeadershipResponse>* WatchLeadership(
      grpc::CallbackServerContext* context, const v1::WatchLeadershipRequest* request) override;
  grpc::ServerUnaryReactor* Resign(grpc::CallbackServerContext* context,
                                   const v1::ResignRequest* request,
                                   v1::ResignResponse* response) override;
  grpc::ServerUnaryReactor* AcknowledgeStepDown(grpc::CallbackServerContext* context,
                                                const v1::AcknowledgeStepDownRequest* request,
                                                v1::AcknowledgeStepDownResponse* response) override;

  // Sends every stream what it is owed now (see the file comment). Returns how
  // long until the next heartbeat may be due (InfiniteDuration if no stream
  // asked for heartbeats); call again by then. Never blocks on a client.
  absl::Duration Refresh();

  // Shutdown: refuses new streams (UNAVAILABLE) and ends every open stream
  // with OK once the state it is owed has been written. Call Refresh() first
  // so the latest snapshot (stepping_down) is among what is owed. Returns
  // without waiting for the streams to end.
  void FinishAll();

  // Open WatchLeadership streams.
  int watchers() const;

 private:
  class WatchReactor;

  // Admits a new stream unless at the limit or shutting down; the status
  // to refuse it with otherwise.
  grpc::Status Register(WatchReactor* reactor);
  void Unregister(WatchReactor* reactor);

  const LeaderElectionServiceOptions options_;
  const ApiContext* const context_;
  FanOutWorkers fanout_;

  mutable absl::Mutex mu_;
  absl::flat_hash_set<WatchReactor*> watchers_ ABSL_GUARDED_BY(mu_);
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_LEADER_ELECTION_SERVICE_H_

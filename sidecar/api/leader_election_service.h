// LeaderElectionService: the baton.v1.LeaderElection gRPC service
// (GetLeadership, WatchLeadership, Resign, AcknowledgeStepDown) on grpc++'s
// callback API.
//
// Every message that may say leader (a GetLeadership answer, each watch
// message: initial, changed or heartbeat) is built, at the moment it is
// built, from the LeaderAnswer LocalApi obtains (LeadershipPublisher::Promise)
// for the request's client_id, so its promise is on the ledger before it is
// sent and a step-down that began earlier is never contradicted. A malformed
// client_id (not 1-64 chars of [A-Za-z0-9._-]) is INVALID_ARGUMENT.
//
// WatchLeadership streams are WatchStreams (watch_streams.h) of a
// LeadershipWatchSource (leadership_watch_source.h), driven by the owner
// (GrpcServer) through Refresh(): a stream is sent the current state when its
// holder, fencing token, is_leader, stepping_down, observed or Lease uid
// differs from its last message, plus heartbeats if it asked for them.
// Renew-only changes (renew_time) are not sent. GET /leader/watch decides
// what is news with the same source.
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

#include "absl/time/time.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/leadership_watch_source.h"
#include "sidecar/api/local_api.h"
#include "sidecar/api/watch_streams.h"

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

// What WatchLeadership streams watch; a stream's param is its client_id.
using WatchLeadershipSource = LeadershipWatchSource<v1::WatchLeadershipResponse>;

// Thread-safe. The RPC handlers are called by grpc++; Refresh and FinishAll
// by the owner from any thread. The owner must shut the grpc::Server down
// (which waits for every stream to end) before destroying the service.
class LeaderElectionService final : public v1::LeaderElection::CallbackService {
 public:
  // `context` must outlive the service.
  LeaderElectionService(LeaderElectionServiceOptions options, const ApiContext* context);

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

  // WatchStreams::Refresh of the WatchLeadership streams: sends every stream
  // what it is owed now; returns how long until the next heartbeat may be
  // due. Never blocks on a client.
  absl::Duration Refresh() { return watches_.Refresh(); }

  // WatchStreams::FinishAll. Call Refresh() first so the latest snapshot
  // (stepping_down) is among what is owed.
  void FinishAll() { watches_.FinishAll(); }

  // Open WatchLeadership streams.
  int watchers() const { return watches_.size(); }

 private:
  // Ends a unary call with `status`, counted under `method`.
  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* call, const char* method,
                                   const grpc::Status& status) const;

  const ApiContext* const context_;
  const LocalApi api_;
  const WatchLeadershipSource source_;
  WatchStreams<WatchLeadershipSource> watches_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_LEADER_ELECTION_SERVICE_H_

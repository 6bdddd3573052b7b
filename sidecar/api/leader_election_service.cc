#include "sidecar/api/leader_election_service.h"

#include <string>
#include <string_view>

#include "google/protobuf/util/time_util.h"
#include "sidecar/api/grpc_watch_reactor.h"
#include "sidecar/api/leadership_proto.h"

namespace baton {
namespace {

using Response = v1::WatchLeadershipResponse;

constexpr char kGetLeadership[] = "GetLeadership";
constexpr char kWatchLeadership[] = "WatchLeadership";
constexpr char kResign[] = "Resign";
constexpr char kAcknowledgeStepDown[] = "AcknowledgeStepDown";

// OK for an anonymous reader (empty) or a well-formed name.
absl::Status ValidateOptionalClientId(std::string_view client_id) {
  return client_id.empty() ? absl::OkStatus() : ValidateClientId(client_id);
}

Response::Event ToProto(WatchEvent event) {
  switch (event) {
    case WatchEvent::kInitial:
      return Response::EVENT_INITIAL;
    case WatchEvent::kChanged:
      return Response::EVENT_CHANGED;
    case WatchEvent::kHeartbeat:
      return Response::EVENT_HEARTBEAT;
  }
  return Response::EVENT_UNSPECIFIED;
}

// LeadershipWatchSource's format for WatchLeadership.
Response WatchMessage(const Leadership& leadership, MonoTime now, WatchEvent event) {
  Response message;
  message.set_event(ToProto(event));
  LeadershipToProto(leadership, now, message.mutable_leadership());
  return message;
}

}  // namespace

LeaderElectionService::LeaderElectionService(LeaderElectionServiceOptions options,
                                             const ApiContext* context)
    : context_(context),
      source_(context, &WatchMessage),
      watches_(WatchStreamsOptions{options.max_watchers, options.min_heartbeat_interval,
                                   options.fanout_threads, /*count_as_watchers=*/true},
               &source_, context->metrics) {}

grpc::ServerUnaryReactor* LeaderElectionService::GetLeadership(
    grpc::CallbackServerContext* context, const v1::GetLeadershipRequest* request,
    v1::Leadership* response) {
  grpc::Status status = ToGrpcStatus(ValidateOptionalClientId(request->client_id()));
  if (status.ok()) {
    const MonoTime now = context_->clock->Monotonic();
    LeadershipToProto(context_->publisher->Answer(request->client_id(), now).leadership, now,
                      response);
  }
  context_->metrics->ObserveGrpcRequest(kGetLeadership, status.error_code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerWriteReactor<Response>* LeaderElectionService::WatchLeadership(
    grpc::CallbackServerContext*, const v1::WatchLeadershipRequest* request) {
  const absl::Duration heartbeat =
      request->has_heartbeat_interval()
          ? absl::Nanoseconds(google::protobuf::util::TimeUtil::DurationToNanoseconds(
                request->heartbeat_interval()))
          : absl::ZeroDuration();
  return GrpcWatchReactor<WatchLeadershipSource>::Open(
      &watches_, request->client_id(), heartbeat, ValidateOptionalClientId(request->client_id()),
      kWatchLeadership, context_->metrics);
}

grpc::ServerUnaryReactor* LeaderElectionService::Resign(grpc::CallbackServerContext* context,
                                                        const v1::ResignRequest*,
                                                        v1::ResignResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  grpc::Status status;
  if (!context_->hooks.resign) {
    status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "resign is not enabled");
  } else {
    response->set_was_leader(
        context_->publisher->Current().leadership.IsLeader(context_->clock->Monotonic()));
    // The hook only begins the step-down (ApiHooks::resign): nothing here
    // waits for the release.
    status = ToGrpcStatus(context_->hooks.resign());
    if (status.ok()) {
      // Built like any other answer: should the hook have left it leading,
      // the promise is on the ledger.
      const MonoTime now = context_->clock->Monotonic();
      LeadershipToProto(context_->publisher->Answer("", now).leadership, now,
                        response->mutable_leadership());
    }
  }
  context_->metrics->ObserveGrpcRequest(kResign, status.error_code());
  reactor->Finish(status);
  return reactor;
}

grpc::ServerUnaryReactor* LeaderElectionService::AcknowledgeStepDown(
    grpc::CallbackServerContext* context, const v1::AcknowledgeStepDownRequest* request,
    v1::AcknowledgeStepDownResponse* response) {
  Acknowledgement ack{request->client_id(), request->fencing_token(), std::nullopt};
  absl::Status valid = request->client_id().empty()
                           ? absl::InvalidArgumentError("client_id is required")
                           : ValidateClientId(request->client_id());
  if (valid.ok() && request->has_valid_until_boottime()) {
    absl::StatusOr<MonoTime> up_to = DeadlineFromProto(request->valid_until_boottime());
    valid = up_to.status();
    if (up_to.ok()) ack.up_to = *up_to;
  }
  grpc::Status status = ToGrpcStatus(valid);
  if (status.ok()) response->set_acknowledged(baton::AcknowledgeStepDown(*context_, ack));
  context_->metrics->ObserveGrpcRequest(kAcknowledgeStepDown, status.error_code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace baton

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

Response::Event ToProto(WatchReason reason) {
  switch (reason) {
    case WatchReason::kInitial:
      return Response::EVENT_INITIAL;
    case WatchReason::kChanged:
      return Response::EVENT_CHANGED;
    case WatchReason::kHeartbeat:
      return Response::EVENT_HEARTBEAT;
  }
  return Response::EVENT_UNSPECIFIED;
}

// LeadershipWatchSource's format for WatchLeadership.
Response WatchMessage(const LeaderAnswer& answer, WatchReason reason) {
  Response message;
  message.set_event(ToProto(reason));
  LeadershipToProto(answer, answer.at(), message.mutable_leadership());
  return message;
}

// A request's max_valid_for (Reader::max_valid_for); zero or negative ones
// are passed on for LocalApi::Validate to refuse.
template <typename Request>
std::optional<absl::Duration> MaxValidFor(const Request& request) {
  if (!request.has_max_valid_for()) return std::nullopt;
  return absl::Nanoseconds(
      google::protobuf::util::TimeUtil::DurationToNanoseconds(request.max_valid_for()));
}

}  // namespace

grpc::ServerUnaryReactor* LeaderElectionService::Finish(grpc::CallbackServerContext* call,
                                                        const char* method,
                                                        const grpc::Status& status) const {
  context_->metrics->ObserveGrpcRequest(method, status.error_code());
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

LeaderElectionService::LeaderElectionService(LeaderElectionServiceOptions options,
                                             const ApiContext* context)
    : context_(context),
      api_(context),
      source_(context, &WatchMessage),
      watches_(WatchStreamsOptions{.max_streams = options.max_watchers,
                                   .min_heartbeat_interval = options.min_heartbeat_interval,
                                   .fanout_threads = options.fanout_threads,
                                   .count_as_watchers = true,
                                   .clock = context->wait_clock},
               &source_, context->metrics) {}

grpc::ServerUnaryReactor* LeaderElectionService::GetLeadership(
    grpc::CallbackServerContext* context, const v1::GetLeadershipRequest* request,
    v1::Leadership* response) {
  const absl::StatusOr<LeaderAnswer> answer =
      api_.Get(Reader{request->client_id(), MaxValidFor(*request)});
  const grpc::Status status = ToGrpcStatus(answer.status());
  if (answer.ok()) LeadershipToProto(*answer, answer->at(), response);
  return Finish(context, kGetLeadership, status);
}

grpc::ServerWriteReactor<Response>* LeaderElectionService::WatchLeadership(
    grpc::CallbackServerContext*, const v1::WatchLeadershipRequest* request) {
  const absl::Duration heartbeat =
      request->has_heartbeat_interval()
          ? absl::Nanoseconds(google::protobuf::util::TimeUtil::DurationToNanoseconds(
                request->heartbeat_interval()))
          : absl::ZeroDuration();
  Reader reader{request->client_id(), MaxValidFor(*request)};
  const absl::Status valid = LocalApi::Validate(reader);
  return GrpcWatchReactor<WatchLeadershipSource>::Open(&watches_, std::move(reader), heartbeat,
                                                       valid, kWatchLeadership, context_->metrics);
}

grpc::ServerUnaryReactor* LeaderElectionService::Resign(grpc::CallbackServerContext* context,
                                                        const v1::ResignRequest*,
                                                        v1::ResignResponse* response) {
  absl::StatusOr<v1::ResignResponse> resigned = api_.Resign();
  const grpc::Status status = ToGrpcStatus(resigned.status());
  if (resigned.ok()) *response = *std::move(resigned);
  return Finish(context, kResign, status);
}

grpc::ServerUnaryReactor* LeaderElectionService::AcknowledgeStepDown(
    grpc::CallbackServerContext* context, const v1::AcknowledgeStepDownRequest* request,
    v1::AcknowledgeStepDownResponse* response) {
  Acknowledgement ack{request->client_id(), request->fencing_token(), std::nullopt};
  absl::StatusOr<MonoTime> up_to = MonoTime();
  if (request->has_valid_until_boottime()) {
    up_to = DeadlineFromProto(request->valid_until_boottime());
    if (up_to.ok()) ack.up_to = *up_to;
  }
  absl::StatusOr<v1::AcknowledgeStepDownResponse> acknowledged =
      up_to.ok() ? api_.Acknowledge(ack) : up_to.status();
  const grpc::Status status = ToGrpcStatus(acknowledged.status());
  if (acknowledged.ok()) *response = *std::move(acknowledged);
  return Finish(context, kAcknowledgeStepDown, status);
}

}  // namespace baton

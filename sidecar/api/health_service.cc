#include "sidecar/api/health_service.h"

#include <string_view>
#include <utility>

#include "sidecar/api/grpc_watch_reactor.h"

namespace baton {
namespace {

constexpr char kCheck[] = "HealthCheck";
constexpr char kWatch[] = "HealthWatch";

HealthService::Status Serving(bool serving) {
  return serving ? HealthService::Response::SERVING : HealthService::Response::NOT_SERVING;
}

}  // namespace

HealthService::HealthService(int max_watchers, const ApiContext* context)
    : context_(context),
      source_(this),
      watches_(WatchStreamsOptions{.max_streams = max_watchers, .clock = context->wait_clock},
               &source_, context->metrics) {}

std::optional<size_t> HealthService::IndexOf(const std::string& service) {
  static constexpr std::array<std::string_view, kServices> kNames = {"", kHealthServiceReady,
                                                                     kHealthServiceLeader};
  for (size_t i = 0; i < kServices; ++i) {
    if (kNames[i] == service) return i;
  }
  return std::nullopt;
}

HealthService::Status HealthService::StatusNow(size_t index) const {
  if (shutting_down_) return Response::NOT_SERVING;
  switch (index) {
    case 0:
      return Serving(CheckLiveness(*context_).ok());
    case 1:
      return Serving(CheckReadiness(*context_).ok());
    default:
      return Serving(
          context_->publisher->Current().leadership.IsLeader(context_->clock->Monotonic()));
  }
}

HealthService::WatchSource::Round HealthService::WatchSource::NewRound() const {
  Statuses statuses;
  for (size_t i = 0; i < kWatchable; ++i) statuses[i] = service_->StatusNow(i);
  return Round(statuses);
}

HealthService::Status HealthService::WatchSource::Round::Probe(const std::string& service) const {
  const std::optional<size_t> index = IndexOf(service);
  return index && *index < kWatchable ? statuses_[*index] : Response::SERVICE_UNKNOWN;
}

WatchAnswer<HealthService::Response, HealthService::Status>
HealthService::WatchSource::Round::Answer(const std::string& service,
                                          absl::FunctionRef<WatchReason(const Key&)>) {
  // The status says all there is; a message is a few bytes, so none is shared.
  const Status status = Probe(service);
  auto message = std::make_shared<Response>();
  message->set_status(status);
  return {std::move(message), status};
}

grpc::ServerUnaryReactor* HealthService::Check(grpc::CallbackServerContext* context,
                                               const grpc::health::v1::HealthCheckRequest* request,
                                               Response* response) {
  // Only the service asked about is evaluated, at the moment it is asked.
  grpc::Status status;
  if (const std::optional<size_t> index = IndexOf(request->service())) {
    response->set_status(StatusNow(*index));
  } else {
    status = grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
  }
  context_->metrics->ObserveGrpcRequest(kCheck, status.error_code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerWriteReactor<HealthService::Response>* HealthService::Watch(
    grpc::CallbackServerContext*, const grpc::health::v1::HealthCheckRequest* request) {
  // A leader status with no deadline would outlive the promise (see the
  // header).
  const std::optional<size_t> index = IndexOf(request->service());
  const absl::Status refusal =
      index && *index >= kWatchable
          ? absl::FailedPreconditionError(
                "health service \"leader\" cannot be watched: a Watch message carries no "
                "deadline, so a paused sidecar would stay SERVING; use Check (a grpc: "
                "readinessProbe) or baton.v1.LeaderElection/WatchLeadership, whose answers "
                "say how long they hold")
          : absl::OkStatus();
  return GrpcWatchReactor<WatchSource>::Open(&watches_, request->service(), absl::ZeroDuration(),
                                             refusal, kWatch, context_->metrics);
}

}  // namespace baton

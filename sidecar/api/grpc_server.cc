#include "sidecar/api/grpc_server.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "sidecar/common/log.h"

namespace baton {
namespace {

// A duration as the int milliseconds of a gRPC channel argument; infinite
// (or beyond INT_MAX ms) is INT_MAX, which gRPC reads as "never".
int Millis(absl::Duration d) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  return static_cast<int>(std::min(absl::ToInt64Milliseconds(d), kMax));
}

}  // namespace

GrpcServer::GrpcServer(GrpcServerOptions options, const ApiContext* context)
    : options_(std::move(options)),
      context_(context),
      service_(LeaderElectionServiceOptions{options_.max_watchers, options_.min_heartbeat_interval,
                                            options_.fanout_threads},
               context),
      health_(options_.max_health_watchers, context),
      refresher_(context, options_.refresh_interval, [this] { return RefreshAll(); }) {}

GrpcServer::~GrpcServer() { Shutdown(context_->wait_clock->Monotonic()); }

absl::Status GrpcServer::Start() {
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(options_.address, grpc::InsecureServerCredentials(), &selected_port);
  builder.RegisterService(&service_);
  builder.RegisterService(&health_);
  builder.SetMaxReceiveMessageSize(options_.max_receive_message_bytes);
  grpc::ResourceQuota quota("baton-grpc");
  quota.Resize(options_.memory_quota_bytes);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             options_.max_concurrent_streams_per_connection);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, Millis(options_.max_connection_idle));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, Millis(options_.max_connection_age));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             Millis(options_.max_connection_age_grace));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Millis(options_.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Millis(options_.keepalive_timeout));
  // Never share the port with another process (gRPC sets SO_REUSEPORT by
  // default): a second sidecar must fail to start, not split the traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A quiet watch stream sends no data; keep pinging it anyway.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || selected_port == 0) {
    server_.reset();
    return absl::UnavailableError(
        absl::StrCat("gRPC server could not listen on ", options_.address));
  }
  port_ = selected_port;
  refresher_.Start();
  spdlog::info("event=grpc_listening addr={} port={}", options_.address, selected_port);
  return absl::OkStatus();
}

int GrpcServer::port() const { return port_; }

absl::Duration GrpcServer::RefreshAll() {
  const absl::Duration next_heartbeat = service_.Refresh();
  health_.Refresh();
  return next_heartbeat;
}

void GrpcServer::Shutdown(MonoTime deadline) {
  absl::MutexLock shutdown_lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ == nullptr) return;

  refresher_.Stop();
  // The last word on every stream is the latest state (stepping_down on an
  // orderly shutdown; NOT_SERVING for health), then OK.
  health_.BeginShutdown();
  RefreshAll();
  service_.FinishAll();
  health_.FinishAll();
  // Waits for calls until the deadline, then cancels what is left. gRPC
  // takes a wall-clock deadline: it is made from the time left at the call.
  const absl::Duration left = deadline - context_->wait_clock->Monotonic();
  server_->Shutdown(
      absl::ToChronoTime(context_->wait_clock->Wall() + std::max(left, absl::ZeroDuration())));
  server_->Wait();
  spdlog::info("event=grpc_stopped");
}

}  // namespace baton

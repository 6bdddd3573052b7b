// GrpcWatchReactor: a WatchStreams stream (watch_streams.h) served as a
// grpc++ callback-API server stream, and ToGrpcStatus, the one mapping from
// absl to gRPC status on the gRPC boundary.
//
// The reactor turns grpc++'s reactions into the Stream contract: StartWrite
// for Send, Finish for End, OnWriteDone/OnCancel/OnDone for WriteDone,
// Cancelled and Done. It deletes itself in OnDone, after recording the call's
// final code in baton_grpc_requests_total under its method label.
#ifndef BATON_SIDECAR_API_GRPC_WATCH_REACTOR_H_
#define BATON_SIDECAR_API_GRPC_WATCH_REACTOR_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"
#include "sidecar/api/metrics.h"
#include "sidecar/api/watch_streams.h"

namespace baton {

// The numeric codes of absl and gRPC are defined to be identical.
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

template <typename Source>
class GrpcWatchReactor final : public grpc::ServerWriteReactor<typename Source::Response>,
                               public WatchStreams<Source>::Stream {
 public:
  using Response = typename Source::Response;

  // A new stream of `param` on `streams` (see WatchStreams::Open): it is
  // sent its first message, or refused, before this returns. `method` (a
  // string literal) and `metrics` must outlive the call.
  static grpc::ServerWriteReactor<Response>* Open(WatchStreams<Source>* streams,
                                                  typename Source::Param param,
                                                  absl::Duration heartbeat,
                                                  const absl::Status& refusal, const char* method,
                                                  Metrics* metrics) {
    auto* reactor = new GrpcWatchReactor(method, metrics);
    streams->Open(reactor, std::move(param), heartbeat, refusal);
    return reactor;
  }

  void OnWriteDone(bool ok) override { this->WriteDone(ok); }
  void OnCancel() override { this->Cancelled(); }
  void OnDone() override {
    this->Done();
    metrics_->ObserveGrpcRequest(method_, final_code_);
    delete this;
  }

 private:
  GrpcWatchReactor(const char* method, Metrics* metrics) : method_(method), metrics_(metrics) {}

  void Send(const Response& message) override { this->StartWrite(&message); }
  void End(const absl::Status& status) override {
    // OnDone follows Finish, so this is read after it is written.
    final_code_ = static_cast<grpc::StatusCode>(status.code());
    this->Finish(ToGrpcStatus(status));
  }

  const char* const method_;
  Metrics* const metrics_;
  grpc::StatusCode final_code_ = grpc::StatusCode::OK;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_GRPC_WATCH_REACTOR_H_

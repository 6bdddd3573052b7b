// Daemon: the running sidecar. Wires the Kubernetes client, the election
// loop, the Lease watcher and the local API servers together, and takes them
// down in the order that keeps the application safe.
//
// Threads: the election loop (one), the Lease watcher (one), the HTTP
// server(s) and the gRPC server with its refresh thread. They share exactly
// one object, the LeadershipPublisher; everything else is owned by one thread
// or thread-safe by contract.
//
// Shutdown order (Stop):
//   1. stop reporting leader: stepping_down is published at once, so every
//      answer from then on says isLeader=false and watchers get a
//      stepping-down message;
//   2. once every promise handed out is acknowledged or has lapsed (within
//      the grace period), release the Lease (if --release-on-shutdown and a
//      fresh read still shows this sidecar as holder);
//   3. stop the watcher, take the leader label off this Pod (--leader-label)
//      and close the servers.
#ifndef BATON_SIDECAR_MAIN_DAEMON_H_
#define BATON_SIDECAR_MAIN_DAEMON_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/grpc_server.h"
#include "sidecar/api/http_server.h"
#include "sidecar/api/metrics.h"
#include "sidecar/election/election_loop.h"
#include "sidecar/election/elector.h"
#include "sidecar/election/leadership.h"
#include "sidecar/kube/event_recorder.h"
#include "sidecar/kube/kube_lease_store.h"
#include "sidecar/kube/lease_watcher.h"
#include "sidecar/kube/pod_labeler.h"
#include "sidecar/kube/rest_config.h"
#include "sidecar/main/config.h"

namespace baton {

class Daemon {
 public:
  // Builds every component and starts them: servers listening, the election
  // loop campaigning, the watcher watching. Unavailable if an address cannot
  // be bound; InvalidArgument/FailedPrecondition for an unusable API config.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const SidecarConfig& config,
                                                       kube::RestConfig rest);

  // Stop(ZeroDuration()) if Stop was not called.
  ~Daemon();

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Shuts down in the order above; the release and the closing of the servers
  // each get up to `grace`. Blocks. Idempotent.
  void Stop(absl::Duration grace);

  // The leadership this sidecar publishes, for an in-process application
  // (`baton run`): answer through it like the local API does. Thread-safe.
  LeadershipPublisher* publisher() { return &publisher_; }
  Clock* clock() const { return clock_; }
  // A reader has stopped acting on what it was told (Acknowledgement): what
  // POST /leader/ack does (LeadershipPublisher::Acknowledge, then
  // ElectionLoop::PromisesChanged). Thread-safe.
  bool Acknowledge(const Acknowledgement& ack);

 private:
  // Feeds election events into the metrics and, with --events, into
  // Kubernetes Events (queued: the election loop never waits for them).
  class Listener final : public ElectionListener {
   public:
    Listener(Metrics* metrics, std::string identity)
        : metrics_(metrics), identity_(std::move(identity)) {}
    // Set before the election loop starts; null: no Events, no label.
    void set_events(kube::EventRecorder* events) { events_ = events; }
    void set_labeler(kube::PodLabeler* labeler) { labeler_ = labeler; }
    void OnRenew(absl::Duration latency, bool ok) override { metrics_->ObserveRenew(latency, ok); }
    void OnAcquired(int64_t token) override;
    void OnLost(std::string_view reason) override;
    void OnReleased() override;
    void OnSlowPath() override { metrics_->ObserveSlowPath(); }
    void OnObservedHolder(const std::string& holder) override;

   private:
    void Record(const char* type, const char* action, std::string note);

    Metrics* const metrics_;
    const std::string identity_;
    kube::EventRecorder* events_ = nullptr;
    kube::PodLabeler* labeler_ = nullptr;
  };

  Daemon(const SidecarConfig& config, Clock* clock);
  absl::Status StartComponents(kube::RestConfig rest);
  absl::Status Liveness() const;
  absl::Status Readiness() const;
  absl::Status Resign();
  // The watcher's verdicts: a watch that works lets followers sleep until the
  // Lease expires; one that does not (403 without the `watch` verb, or the
  // API server away) makes them poll every retry period.
  void OnWatchStatus(const absl::Status& status);
  // --native-sidecar, on shutdown: steps down, then voids every promise if
  // the Pod's status says its application containers have all exited.
  void VoidPromisesIfAppExited();

  const SidecarConfig config_;
  Clock* const clock_;
  LeadershipPublisher publisher_;
  Metrics metrics_;
  Listener listener_;
  ApiContext api_context_;

  std::unique_ptr<kube::KubeLeaseStore> store_;
  std::unique_ptr<Elector> elector_;
  std::unique_ptr<ElectionLoop> loop_;
  std::unique_ptr<kube::LeaseWatcher> watcher_;
  std::unique_ptr<kube::EventRecorder> events_;   // only with --events
  std::unique_ptr<kube::PodLabeler> labeler_;     // only with --leader-label
  std::unique_ptr<kube::KubeClient> pod_client_;  // only with --native-sidecar
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> metrics_http_;  // only with --metrics-addr
  std::unique_ptr<GrpcServer> grpc_;
  // Touched by the watcher's thread only.
  std::optional<bool> watch_works_;
  bool stopped_ = false;
};

}  // namespace baton

#endif  // BATON_SIDECAR_MAIN_DAEMON_H_

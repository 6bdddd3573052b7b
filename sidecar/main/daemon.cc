#include "sidecar/main/daemon.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "sidecar/common/log.h"
#include "sidecar/kube/kube_client.h"
#include "sidecar/kube/pod_status.h"

namespace baton {
namespace {

Leadership InitialLeadership(const SidecarConfig& config) {
  Leadership l;
  l.identity = config.identity;
  l.lease_name = config.lease_name;
  l.lease_namespace = config.lease_namespace;
  return l;
}

// Builds `worker` (an EventRecorder or a PodLabeler) on a client of its own:
// its requests never queue behind the Lease's, nor count with them in the
// metrics.
template <typename Worker, typename Options>
absl::Status CreateOnOwnClient(const kube::RestConfig& rest, Options options, Clock* clock,
                               std::unique_ptr<Worker>& worker) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = kube::KubeClient::Create(rest);
  if (!client.ok()) return client.status();
  worker = std::make_unique<Worker>(*std::move(client), std::move(options), clock);
  return absl::OkStatus();
}

}  // namespace

Daemon::Daemon(const SidecarConfig& config, Clock* clock)
    : config_(config),
      clock_(clock),
      publisher_(InitialLeadership(config)),
      metrics_(&publisher_, clock),
      listener_(&metrics_, config.identity) {}

// Reason "LeaderElection", as client-go records it; the notes start the same
// way ("<identity> became leader", "... stopped leading").
void Daemon::Listener::Record(const char* type, const char* action, std::string note) {
  if (events_ == nullptr) return;
  kube::EventRecord record;
  record.type = type;
  record.reason = "LeaderElection";
  record.action = action;
  record.note = std::move(note);
  events_->Record(std::move(record));
}

void Daemon::Listener::OnAcquired(int64_t token) {
  metrics_->ObserveLeadershipAcquired();
  if (labeler_ != nullptr) labeler_->SetLeading(true);
  Record("Normal", "BecameLeader",
         absl::StrCat(identity_, " became leader (fencing token ", token, ")"));
}

void Daemon::Listener::OnLost(std::string_view reason) {
  metrics_->ObserveLeadershipLost();
  if (labeler_ != nullptr) labeler_->SetLeading(false);
  // Stepping down on purpose is routine; losing the Lease is not.
  const bool on_purpose = reason == "shutdown" || reason == "resign";
  Record(on_purpose ? "Normal" : "Warning", "StoppedLeading",
         absl::StrCat(identity_, " stopped leading: ", std::string(reason)));
}

void Daemon::Listener::OnReleased() {
  Record("Normal", "Released", absl::StrCat(identity_, " released the Lease"));
}

void Daemon::Listener::OnObservedHolder(const std::string& holder) {
  if (holder.empty() || holder == identity_) return;
  Record("Normal", "ObservedLeader", absl::StrCat(identity_, " observed a new leader: ", holder));
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const SidecarConfig& config,
                                                      kube::RestConfig rest) {
  std::unique_ptr<Daemon> daemon(new Daemon(config, SystemClock()));
  if (absl::Status s = daemon->StartComponents(std::move(rest)); !s.ok()) {
    daemon->Stop(absl::ZeroDuration());
    return s;
  }
  return daemon;
}

absl::Status Daemon::StartComponents(kube::RestConfig rest) {
  rest.request_timeout = config_.api_timeout;
  kube::KubeClientOptions client_options;
  client_options.observer = [this](std::string_view verb, int code, absl::Duration latency) {
    metrics_.ObserveApiRequest(absl::string_view(verb.data(), verb.size()), code, latency);
  };
  // The election and the watch each get a client: a watch holds its
  // connection for minutes and must never delay a renew.
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> election_client =
      kube::KubeClient::Create(rest, client_options);
  if (!election_client.ok()) return election_client.status();
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> watch_client =
      kube::KubeClient::Create(rest, client_options);
  if (!watch_client.ok()) return watch_client.status();
  if (config_.events) {
    kube::EventRecorderOptions options{.lease_namespace = config_.lease_namespace,
                                       .lease_name = config_.lease_name,
                                       .identity = config_.identity};
    if (absl::Status s = CreateOnOwnClient(rest, std::move(options), clock_, events_); !s.ok()) {
      return s;
    }
    listener_.set_events(events_.get());
  }
  if (!config_.leader_label.empty()) {
    kube::PodLabelerOptions options{
        .pod_namespace = config_.pod_namespace,
        .pod_name = config_.pod_name,
        .label_key = config_.leader_label,
        .lease = absl::StrCat(config_.lease_namespace, "/", config_.lease_name),
        .resync = config_.timing.lease_duration,
        .retry = config_.timing.retry_period};
    if (absl::Status s = CreateOnOwnClient(rest, std::move(options), clock_, labeler_); !s.ok()) {
      return s;
    }
    listener_.set_labeler(labeler_.get());
  }

  if (config_.native_sidecar) {
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> pod_client = kube::KubeClient::Create(rest);
    if (!pod_client.ok()) return pod_client.status();
    pod_client_ = *std::move(pod_client);
  }

  store_ = std::make_unique<kube::KubeLeaseStore>(std::move(*election_client),
                                                  config_.lease_namespace, config_.lease_name);
  Elector::Options options;
  options.identity = config_.identity;
  options.lease_name = config_.lease_name;
  options.lease_namespace = config_.lease_namespace;
  options.lease_duration = config_.timing.lease_duration;
  options.renew_deadline = config_.timing.renew_deadline;
  options.retry_period = config_.timing.retry_period;
  options.release_on_shutdown = config_.release_on_shutdown;
  options.listener = &listener_;
  elector_ = std::make_unique<Elector>(std::move(options), clock_, store_.get());
  loop_ = std::make_unique<ElectionLoop>(elector_.get(), &publisher_);

  api_context_.publisher = &publisher_;
  api_context_.clock = clock_;
  api_context_.wait_clock = clock_;
  api_context_.metrics = &metrics_;
  api_context_.max_unnamed_valid_for = config_.max_unnamed_valid_for;
  api_context_.hooks.liveness = [this] { return Liveness(); };
  api_context_.hooks.readiness = [this] { return Readiness(); };
  api_context_.hooks.resign = [this] { return Resign(); };
  api_context_.hooks.acknowledge = [this](const Acknowledgement& ack) { return Acknowledge(ack); };

  // Servers first: a port already in use should stop the sidecar before it
  // campaigns, not after it has become leader.
  HttpServerOptions http_options;
  http_options.address = config_.http_addr;
  http_options.routes = HttpRoutes::kApi;
  http_options.watch_heartbeat = config_.sse_heartbeat;
  http_ = std::make_unique<HttpServer>(http_options, &api_context_);
  if (absl::Status s = http_->Start(); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("--http-addr=", config_.http_addr, ": ", s.message()));
  }
  if (!config_.metrics_addr.empty()) {
    HttpServerOptions metrics_options;
    metrics_options.address = config_.metrics_addr;
    metrics_options.routes = HttpRoutes::kProbesAndMetrics;
    metrics_http_ = std::make_unique<HttpServer>(metrics_options, &api_context_);
    if (absl::Status s = metrics_http_->Start(); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("--metrics-addr=", config_.metrics_addr, ": ", s.message()));
    }
  }
  GrpcServerOptions grpc_options;
  grpc_options.address = config_.grpc_addr;
  grpc_ = std::make_unique<GrpcServer>(grpc_options, &api_context_);
  if (absl::Status s = grpc_->Start(); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("--grpc-addr=", config_.grpc_addr, ": ", s.message()));
  }

  // The elector orders what the watcher sees by resourceVersion and never
  // lets a watch event end its term, so the two may start in any order.
  watcher_ = std::make_unique<kube::LeaseWatcher>(
      std::move(*watch_client), config_.lease_namespace, config_.lease_name, clock_,
      [this](const LeaseEvent& event) { loop_->Observe(event); },
      [this](const absl::Status& status) { OnWatchStatus(status); });
  if (events_ != nullptr) events_->Start();
  if (labeler_ != nullptr) labeler_->Start();
  loop_->Start();
  watcher_->Start();
  spdlog::info("event=started identity={} lease={}/{} server={} http={} grpc={}{}",
               LogValue(config_.identity), config_.lease_namespace, config_.lease_name,
               rest.ServerUrl(), config_.http_addr, config_.grpc_addr,
               config_.metrics_addr.empty() ? "" : " metrics=" + config_.metrics_addr);
  return absl::OkStatus();
}

void Daemon::OnWatchStatus(const absl::Status& status) {
  const bool works = status.ok();
  if (watch_works_ == works) return;
  watch_works_ = works;
  loop_->SetWatchAvailable(works);
  if (works) return;  // the watcher logs event=watch_started itself
  if (status.code() == absl::StatusCode::kPermissionDenied) {
    spdlog::warn(
        "event=watch_forbidden lease={}/{} error={} next=\"polling every retry period; grant "
        "the watch verb on leases for sub-second handover\"",
        config_.lease_namespace, config_.lease_name, LogValue(std::string(status.message())));
  } else {
    spdlog::warn(
        "event=watch_failed lease={}/{} error={} next=\"polling every retry period "
        "while the watch reconnects\"",
        config_.lease_namespace, config_.lease_name, LogValue(status.ToString()));
  }
}

absl::Status Daemon::Liveness() const {
  // A store call may legitimately block the loop for one API timeout (a
  // release: two); beyond that plus a retry period it is stuck.
  const absl::Duration slack = 2 * config_.api_timeout + config_.timing.retry_period;
  const ElectionHealth health = loop_->Health();
  const MonoTime now = clock_->Monotonic();
  if (health.Overdue(now, slack)) {
    return absl::UnavailableError(
        absl::StrCat("election loop is ", absl::FormatDuration(now - health.next_step), " late"));
  }
  return absl::OkStatus();
}

absl::Status Daemon::Readiness() const {
  const LeadershipPublisher::Versioned current = publisher_.Current();
  if (!current.leadership.observed) {
    return absl::UnavailableError("the Lease has not been read yet");
  }
  const ElectionHealth health = loop_->Health();
  const absl::Duration limit = config_.timing.lease_duration + config_.api_timeout;
  if (!health.last_api_contact || clock_->Monotonic() - *health.last_api_contact > limit) {
    return absl::UnavailableError(
        absl::StrCat("no answer from the API server for over ", absl::FormatDuration(limit)));
  }
  return absl::OkStatus();
}

bool Daemon::Acknowledge(const Acknowledgement& ack) {
  const bool acknowledged = publisher_.Acknowledge(ack, clock_->Monotonic());
  metrics_.ObserveAcknowledgement(acknowledged);
  if (acknowledged) loop_->PromisesChanged();
  return acknowledged;
}

absl::Status Daemon::Resign() {
  if (!loop_->Resign()) return absl::UnavailableError("the sidecar is shutting down");
  return absl::OkStatus();
}

void Daemon::Stop(absl::Duration grace) {
  if (stopped_) return;
  stopped_ = true;
  if (loop_ != nullptr && pod_client_ != nullptr) VoidPromisesIfAppExited();
  if (loop_ != nullptr && !loop_->Shutdown(grace)) {
    spdlog::warn("event=release_timeout grace={} next=\"exiting; the Lease expires on its own\"",
                 absl::FormatDuration(grace));
  }
  if (watcher_ != nullptr) watcher_->Stop();
  const MonoTime deadline = clock_->Monotonic() + grace;
  // The leader label's removal (under way since the step-down), then the
  // stepped-down and released Events, if the API server takes them in time.
  if (labeler_ != nullptr) labeler_->Stop(deadline);
  if (events_ != nullptr) events_->Stop(deadline);
  if (grpc_ != nullptr) grpc_->Shutdown(deadline);
  if (http_ != nullptr) http_->Shutdown(deadline);
  if (metrics_http_ != nullptr) metrics_http_->Shutdown(deadline);
}

void Daemon::VoidPromisesIfAppExited() {
  publisher_.StepDown();  // from here on no answer says leader
  const absl::Status exited =
      kube::AppContainersExited(*pod_client_, config_.pod_namespace, config_.pod_name);
  if (!exited.ok()) {
    spdlog::info("event=app_exit_unconfirmed pod={}/{} reason={} next=\"wait for the promises\"",
                 config_.pod_namespace, config_.pod_name, LogValue(exited.ToString()));
    return;
  }
  publisher_.VoidPromises();
  loop_->PromisesChanged();
  spdlog::info(
      "event=app_exited pod={}/{} next=\"release without waiting for promises: no reader in the "
      "Pod can act on one\"",
      config_.pod_namespace, config_.pod_name);
}

Daemon::~Daemon() { Stop(absl::ZeroDuration()); }

}  // namespace baton

#include "sidecar/api/leader_election_service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/util/time_util.h"
#include "sidecar/api/leadership_proto.h"

namespace baton {
namespace {

using Response = v1::WatchLeadershipResponse;
using Message = std::shared_ptr<const Response>;
using SteadyTime = std::chrono::steady_clock::time_point;
using SteadyDuration = std::chrono::steady_clock::duration;

// Below this many writes, waking the fan-out helpers costs more than it saves.
constexpr size_t kMinParallelWrites = 64;

constexpr char kGetLeadership[] = "GetLeadership";
constexpr char kWatchLeadership[] = "WatchLeadership";
constexpr char kResign[] = "Resign";

SteadyDuration ToSteady(absl::Duration d) {
  return std::chrono::duration_cast<SteadyDuration>(absl::ToChronoNanoseconds(d));
}

// The one mapping from absl to gRPC status on this boundary: the numeric
// codes are defined to be identical.
grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// What a watcher is told about when it changes.
struct WatchKey {
  bool is_leader = false;
  bool stepping_down = false;
  bool observed = false;
  int32_t fencing_token = 0;
  std::string holder_identity;
  std::string lease_uid;

  explicit WatchKey(const v1::Leadership& l)
      : is_leader(l.is_leader()),
        stepping_down(l.stepping_down()),
        observed(l.observed()),
        fencing_token(l.fencing_token()),
        holder_identity(l.holder_identity()),
        lease_uid(l.lease_uid()) {}
  WatchKey() = default;
  friend bool operator==(const WatchKey&, const WatchKey&) = default;
};

}  // namespace

// One WatchLeadership stream. Lifetime: created by the handler, deleted in
// OnDone. OnDone only follows Finish, and Finish is only called once no write
// of ours is outstanding, so whoever holds a pending write (writing_) may
// safely touch the reactor without any lock of the service.
class LeaderElectionService::WatchReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  WatchReactor(LeaderElectionService* service, absl::Duration heartbeat)
      : service_(service),
        heartbeat_(ToSteady(heartbeat)),
        slack_(ToSteady(service->options_.min_heartbeat_interval / 2)) {}

  // Ends the stream at once with `status` (never registered).
  void Refuse(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      final_status_ = status;
      finish_called_ = true;
    }
    Finish(status);
  }

  // Sends the first message. Called once, after Register succeeded.
  void Begin(Message initial) {
    registered_ = true;
    const Response* message = initial.get();
    {
      absl::MutexLock lock(&mu_);
      last_key_ = WatchKey(initial->leadership());
      last_send_ = std::chrono::steady_clock::now();
      in_flight_ = std::move(initial);
    }
    StartWrite(message);
  }

  // Decides what this stream is owed given the state `changed` (and the same
  // state as a heartbeat); lowers *next_due to when its next heartbeat is due.
  // Returns true if a write was prepared: the caller must then call
  // StartPrepared() without holding the service's lock.
  bool Prepare(const Message& changed, const Message& heartbeat, SteadyTime now,
               SteadyTime* next_due) {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kOpen) return false;
    const WatchKey key(changed->leadership());
    const bool differs = !(key == last_key_);
    const bool heartbeats = heartbeat_ > SteadyDuration::zero();
    if (writing_) {
      if (differs) stale_ = true;
      // Look again soon, but do not spin while a client is not reading.
      if (heartbeats) *next_due = std::min(*next_due, std::max(HeartbeatDue(), now + slack_));
      return false;
    }
    Message message;
    if (differs) {
      message = changed;
    } else if (heartbeats && now >= HeartbeatDue()) {
      message = heartbeat;
    }
    if (message) {
      in_flight_ = std::move(message);
      writing_ = true;
      last_key_ = key;
      last_send_ = now;
    }
    if (heartbeats) *next_due = std::min(*next_due, HeartbeatDue());
    return writing_;
  }

  void StartPrepared() {
    const Response* message;
    {
      absl::MutexLock lock(&mu_);
      message = in_flight_.get();
    }
    StartWrite(message);
  }

  // Shutdown: finish with OK after what is owed has been written. Returns
  // true if the caller must call Finish() now (outside the service's lock).
  bool Drain() {
    absl::MutexLock lock(&mu_);
    if (state_ == State::kOpen) {
      state_ = State::kDraining;
      final_status_ = grpc::Status::OK;
    }
    return ClaimFinishLocked();
  }

  void FinishNow() {
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      status = final_status_;
    }
    Finish(status);
  }

  void OnWriteDone(bool ok) override {
    Message next;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      in_flight_.reset();
      if (!ok) Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      if (state_ != State::kClosing && stale_) {
        stale_ = false;
        Message current = service_->Evaluate(Response::EVENT_CHANGED);
        WatchKey key(current->leadership());
        if (!(key == last_key_)) {
          next = std::move(current);
          in_flight_ = next;
          writing_ = true;
          last_key_ = std::move(key);
          last_send_ = std::chrono::steady_clock::now();
        }
      }
      if (!next) finish = ClaimFinishLocked();
    }
    if (next) {
      StartWrite(next.get());
    } else if (finish) {
      FinishNow();
    }
  }

  void OnCancel() override {
    bool finish;
    {
      absl::MutexLock lock(&mu_);
      Close(grpc::Status::CANCELLED);
      finish = ClaimFinishLocked();
    }
    if (finish) FinishNow();
  }

  void OnDone() override {
    if (registered_) service_->Unregister(this);
    service_->context_->metrics->ObserveGrpcRequest(kWatchLeadership, final_status_.error_code());
    delete this;
  }

 private:
  enum class State {
    kOpen,      // sending changes and heartbeats
    kDraining,  // shutdown: finish with OK once nothing is owed
    kClosing,   // the client is gone: finish as soon as no write is pending
  };

  SteadyTime HeartbeatDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Coalesce: a heartbeat may go out up to `slack_` early, so one Refresh
    // serves every stream due around the same time.
    return last_send_ + heartbeat_ - slack_;
  }

  void Close(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (state_ == State::kClosing) return;
    state_ = State::kClosing;
    final_status_ = std::move(status);
  }

  // True (once) when the stream should be finished now.
  bool ClaimFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (state_ == State::kOpen || writing_ || finish_called_) return false;
    finish_called_ = true;
    return true;
  }

  LeaderElectionService* const service_;
  const SteadyDuration heartbeat_;  // zero: no heartbeats
  const SteadyDuration slack_;

  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kOpen;
  // A write is outstanding (or, before Begin, about to be): Finish waits.
  bool writing_ ABSL_GUARDED_BY(mu_) = true;
  Message in_flight_ ABSL_GUARDED_BY(mu_);
  // The state changed while a write was outstanding; re-evaluate after it.
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  WatchKey last_key_ ABSL_GUARDED_BY(mu_);
  SteadyTime last_send_ ABSL_GUARDED_BY(mu_);
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  // Read without the lock in OnDone, after every other reaction has run.
  grpc::Status final_status_;
  bool registered_ = false;
};

LeaderElectionService::LeaderElectionService(LeaderElectionServiceOptions options,
                                             const ApiContext* context)
    : options_(std::move(options)),
      context_(context),
      fanout_(options_.fanout_threads, kMinParallelWrites) {}

LeaderElectionService::~LeaderElectionService() = default;

grpc::ServerUnaryReactor* LeaderElectionService::GetLeadership(grpc::CallbackServerContext* context,
                                                               const v1::GetLeadershipRequest*,
                                                               v1::Leadership* response) {
  LeadershipToProto(context_->publisher->Current().leadership, *context_->clock, response);
  context_->metrics->ObserveGrpcRequest(kGetLeadership, grpc::StatusCode::OK);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<Response>* LeaderElectionService::WatchLeadership(
    grpc::CallbackServerContext*, const v1::WatchLeadershipRequest* request) {
  absl::Duration heartbeat = absl::ZeroDuration();
  if (request->has_heartbeat_interval()) {
    const absl::Duration requested = absl::Nanoseconds(
        google::protobuf::util::TimeUtil::DurationToNanoseconds(request->heartbeat_interval()));
    if (requested > absl::ZeroDuration()) {
      heartbeat = std::max(requested, options_.min_heartbeat_interval);
    }
  }
  auto* reactor = new WatchReactor(this, heartbeat);
  if (grpc::Status refused = Register(reactor); !refused.ok()) {
    reactor->Refuse(refused);
    return reactor;
  }
  reactor->Begin(Evaluate(Response::EVENT_INITIAL));
  return reactor;
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
    status = ToGrpcStatus(context_->hooks.resign());
    if (status.ok()) {
      LeadershipToProto(context_->publisher->Current().leadership, *context_->clock,
                        response->mutable_leadership());
    }
  }
  context_->metrics->ObserveGrpcRequest(kResign, status.error_code());
  reactor->Finish(status);
  return reactor;
}

Message LeaderElectionService::Evaluate(Response::Event event) const {
  auto message = std::make_shared<Response>();
  message->set_event(event);
  LeadershipToProto(context_->publisher->Current().leadership, *context_->clock,
                    message->mutable_leadership());
  return message;
}

absl::Duration LeaderElectionService::Refresh() {
  const Message changed = Evaluate(Response::EVENT_CHANGED);
  auto heartbeat = std::make_shared<Response>(*changed);
  heartbeat->set_event(Response::EVENT_HEARTBEAT);
  const Message heartbeat_message = std::move(heartbeat);

  const SteadyTime now = std::chrono::steady_clock::now();
  SteadyTime next_due = SteadyTime::max();
  std::vector<WatchReactor*> to_start;
  {
    absl::MutexLock lock(&mu_);
    for (WatchReactor* reactor : watchers_) {
      if (reactor->Prepare(changed, heartbeat_message, now, &next_due)) to_start.push_back(reactor);
    }
  }
  // Outside the lock: a write may complete, and even finish the stream,
  // inline on the thread that starts it.
  fanout_.Run(to_start.size(), [&](size_t i) { to_start[i]->StartPrepared(); });

  if (next_due == SteadyTime::max()) return absl::InfiniteDuration();
  return std::max(absl::FromChrono(next_due - now), absl::ZeroDuration());
}

void LeaderElectionService::FinishAll() {
  std::vector<WatchReactor*> to_finish;
  {
    absl::MutexLock lock(&mu_);
    finishing_ = true;
    for (WatchReactor* reactor : watchers_) {
      if (reactor->Drain()) to_finish.push_back(reactor);
    }
  }
  for (WatchReactor* reactor : to_finish) reactor->FinishNow();
}

int LeaderElectionService::watchers() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(watchers_.size());
}

grpc::Status LeaderElectionService::Register(WatchReactor* reactor) {
  {
    absl::MutexLock lock(&mu_);
    if (finishing_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the sidecar is shutting down");
    }
    if (watchers_.size() >= static_cast<size_t>(options_.max_watchers)) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "too many WatchLeadership streams on this sidecar");
    }
    watchers_.insert(reactor);
  }
  context_->metrics->AddWatchers(1);
  return grpc::Status::OK;
}

void LeaderElectionService::Unregister(WatchReactor* reactor) {
  {
    absl::MutexLock lock(&mu_);
    watchers_.erase(reactor);
  }
  context_->metrics->AddWatchers(-1);
}

}  // namespace baton

#include "sidecar/api/leader_election_service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
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
constexpr char kAcknowledgeStepDown[] = "AcknowledgeStepDown";

// OK for an anonymous reader (empty) or a well-formed name.
absl::Status ValidateOptionalClientId(std::string_view client_id) {
  return client_id.empty() ? absl::OkStatus() : ValidateClientId(client_id);
}

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
  int64_t fencing_token = 0;
  std::string holder_identity;
  std::string lease_uid;

  WatchKey(const Leadership& l, MonoTime now)
      : is_leader(l.IsLeader(now)),
        stepping_down(l.stepping_down),
        observed(l.observed),
        fencing_token(l.fencing_token),
        holder_identity(l.holder_identity),
        lease_uid(l.lease_uid) {}
  WatchKey() = default;
  friend bool operator==(const WatchKey&, const WatchKey&) = default;
};

// A watch message built from LeadershipPublisher::Answer, and what it says.
struct Answered {
  Message message;
  WatchKey key;
};

Message BuildMessage(const Leadership& snapshot, MonoTime now, Response::Event event) {
  auto message = std::make_shared<Response>();
  message->set_event(event);
  LeadershipToProto(snapshot, now, message->mutable_leadership());
  return message;
}

// What a watcher would be told now, without promising anything: decides
// whether a stream is owed a message at all.
WatchKey Probe(const ApiContext& context, MonoTime now) {
  return WatchKey(context.publisher->Current().leadership, now);
}

// The message for one watcher, from the snapshot LeadershipPublisher::Answer
// gives `client_id` now: a leader message is a promise on the ledger.
Answered AnswerWatcher(const ApiContext& context, std::string_view client_id,
                       Response::Event event) {
  const MonoTime now = context.clock->Monotonic();
  const Leadership snapshot = context.publisher->Answer(client_id, now).leadership;
  return Answered{BuildMessage(snapshot, now, event), WatchKey(snapshot, now)};
}

// The messages of one Refresh, all evaluated at the same instant: each owed
// stream gets its own Answer (it names that stream's reader), but streams
// answered from the same snapshot version with the same event share one
// message. Used by one thread.
class RefreshMessages {
 public:
  RefreshMessages(const ApiContext* context, MonoTime now) : context_(context), now_(now) {}

  // The snapshot answered to `client_id`, and what it says.
  std::pair<LeadershipPublisher::Versioned, WatchKey> Answer(std::string_view client_id) const {
    LeadershipPublisher::Versioned answered = context_->publisher->Answer(client_id, now_);
    WatchKey key(answered.leadership, now_);
    return {std::move(answered), std::move(key)};
  }

  Message Get(const LeadershipPublisher::Versioned& answered, Response::Event event) {
    for (const Built& b : built_) {
      if (b.version == answered.version && b.event == event) return b.message;
    }
    built_.push_back({answered.version, event, BuildMessage(answered.leadership, now_, event)});
    return built_.back().message;
  }

 private:
  struct Built {
    uint64_t version;
    Response::Event event;
    Message message;
  };
  const ApiContext* const context_;
  const MonoTime now_;
  std::vector<Built> built_;
};

}  // namespace

// One WatchLeadership stream. Lifetime: created by the handler, deleted in
// OnDone. OnDone only follows Finish, and Finish is only called once no write
// of ours is outstanding, so whoever holds a pending write (writing_) may
// safely touch the reactor without any lock of the service.
class LeaderElectionService::WatchReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  WatchReactor(LeaderElectionService* service, std::string client_id, absl::Duration heartbeat)
      : service_(service),
        client_id_(std::move(client_id)),
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

  // The reader this stream's promises are given to (empty: anonymous).
  const std::string& client_id() const { return client_id_; }

  // Sends the first message. Called once, after Register succeeded.
  void Begin() {
    registered_ = true;
    Answered initial = AnswerWatcher(*service_->context_, client_id_, Response::EVENT_INITIAL);
    const Response* message = initial.message.get();
    {
      absl::MutexLock lock(&mu_);
      last_key_ = std::move(initial.key);
      last_send_ = std::chrono::steady_clock::now();
      in_flight_ = std::move(initial.message);
    }
    StartWrite(message);
  }

  // Decides whether this stream is owed a message, given what it would be
  // told now (`probe`); lowers *next_due to when its next heartbeat is due.
  // Returns true if it is: the stream is then reserved for the caller, who
  // must call EventFor and StartPrepared, without holding the service's lock.
  bool Prepare(const WatchKey& probe, SteadyTime now, SteadyTime* next_due) {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kOpen) return false;
    const bool differs = !(probe == last_key_);
    const bool heartbeats = heartbeat_ > SteadyDuration::zero();
    if (writing_) {
      if (differs) stale_ = true;
      // Look again soon, but do not spin while a client is not reading.
      if (heartbeats) *next_due = std::min(*next_due, std::max(HeartbeatDue(), now + slack_));
      return false;
    }
    if (differs || (heartbeats && now >= HeartbeatDue())) {
      writing_ = true;
      owes_change_ = differs;
      last_send_ = now;
    }
    if (heartbeats) *next_due = std::min(*next_due, HeartbeatDue());
    return writing_;
  }

  // For a stream Prepare reserved: the event of a message that says `key`.
  Response::Event EventFor(const WatchKey& key) {
    absl::MutexLock lock(&mu_);
    return owes_change_ || !(key == last_key_) ? Response::EVENT_CHANGED
                                               : Response::EVENT_HEARTBEAT;
  }

  // For a stream Prepare reserved: sends `answered`.
  void StartPrepared(Answered answered) {
    const Response* message = answered.message.get();
    {
      absl::MutexLock lock(&mu_);
      last_key_ = std::move(answered.key);
      in_flight_ = std::move(answered.message);
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
        const ApiContext& context = *service_->context_;
        if (!(Probe(context, context.clock->Monotonic()) == last_key_)) {
          Answered current = AnswerWatcher(context, client_id_, Response::EVENT_CHANGED);
          next = std::move(current.message);
          in_flight_ = next;
          writing_ = true;
          last_key_ = std::move(current.key);
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
  const std::string client_id_;
  const SteadyDuration heartbeat_;  // zero: no heartbeats
  const SteadyDuration slack_;

  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kOpen;
  // A write is outstanding (or, before Begin, about to be): Finish waits.
  bool writing_ ABSL_GUARDED_BY(mu_) = true;
  Message in_flight_ ABSL_GUARDED_BY(mu_);
  // The state changed while a write was outstanding; re-evaluate after it.
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  // Prepare reserved the stream because the state changed (not a heartbeat).
  bool owes_change_ ABSL_GUARDED_BY(mu_) = false;
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
  absl::Duration heartbeat = absl::ZeroDuration();
  if (request->has_heartbeat_interval()) {
    const absl::Duration requested = absl::Nanoseconds(
        google::protobuf::util::TimeUtil::DurationToNanoseconds(request->heartbeat_interval()));
    if (requested > absl::ZeroDuration()) {
      heartbeat = std::max(requested, options_.min_heartbeat_interval);
    }
  }
  auto* reactor = new WatchReactor(this, request->client_id(), heartbeat);
  grpc::Status refused = ToGrpcStatus(ValidateOptionalClientId(request->client_id()));
  if (refused.ok()) refused = Register(reactor);
  if (!refused.ok()) {
    reactor->Refuse(refused);
    return reactor;
  }
  reactor->Begin();
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
  grpc::Status status = ToGrpcStatus(request->client_id().empty()
                                         ? absl::InvalidArgumentError("client_id is required")
                                         : ValidateClientId(request->client_id()));
  if (status.ok()) {
    response->set_acknowledged(
        baton::AcknowledgeStepDown(*context_, request->client_id(), request->fencing_token()));
  }
  context_->metrics->ObserveGrpcRequest(kAcknowledgeStepDown, status.error_code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

absl::Duration LeaderElectionService::Refresh() {
  const MonoTime mono_now = context_->clock->Monotonic();
  const WatchKey probe = Probe(*context_, mono_now);
  const SteadyTime now = std::chrono::steady_clock::now();
  SteadyTime next_due = SteadyTime::max();
  std::vector<WatchReactor*> owed;
  {
    absl::MutexLock lock(&mu_);
    for (WatchReactor* reactor : watchers_) {
      if (reactor->Prepare(probe, now, &next_due)) owed.push_back(reactor);
    }
  }
  // Only the streams actually owed a message are answered (and so promised):
  // a promise nobody received would only delay a release.
  RefreshMessages messages(context_, mono_now);
  std::vector<Answered> answers;
  answers.reserve(owed.size());
  for (WatchReactor* reactor : owed) {
    auto [answered, key] = messages.Answer(reactor->client_id());
    Message message = messages.Get(answered, reactor->EventFor(key));
    answers.push_back(Answered{std::move(message), std::move(key)});
  }
  // Outside the lock: a write may complete, and even finish the stream,
  // inline on the thread that starts it.
  fanout_.Run(owed.size(), [&](size_t i) { owed[i]->StartPrepared(std::move(answers[i])); });

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

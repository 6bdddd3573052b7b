// WatchStreams: the open streams of one kind of "watch" (gRPC's
// baton.v1.LeaderElection/WatchLeadership and grpc.health.v1.Health/Watch,
// HTTP's GET /leader/watch) and the fan-out that keeps them current. It knows
// nothing of the transport: each stream is a Stream the transport implements
// (grpc_watch_reactor.h for gRPC's callback API, HttpServer's connections for
// Server-Sent Events), so a thousand open streams cost a thousand small
// objects, not a thousand threads.
//
// The streams are driven from outside: the owner calls Refresh() whenever
// what they watch may have changed, and periodically (WatchRefresher).
// Refresh takes one look at the state (a Source::Round) and decides from it,
// without side effects, which streams are owed a message: those whose last
// message said something else (a different Key) and those whose heartbeat is
// due. Only then does it build those messages, each answered for its stream
// at that moment (Round::Answer, which may record a promise), so nothing is
// promised to a stream that is sent nothing. It never waits for a client: a
// stream still writing is marked stale and gets the newest state when its
// write completes, so a slow reader sees the latest state, not a backlog.
//
// A Source is the kind of stream:
//
//   struct Source {
//     using Response = ...;  // the stream's message type
//     using Key = ...;       // what a stream is told about: regular, ==
//     using Param = ...;     // what a stream asked for when it opened
//     class Round {          // the state at one instant; one thread uses it
//      public:
//       // What the stream opened with `param` would be told; no side effects.
//       // Called with locks held, so it must only look at what the Round
//       // already computed.
//       Key Probe(const Param& param) const;
//       // The message for that stream, answered now; `reason_for` picks the
//       // reason from what the message says.
//       WatchAnswer<Response, Key> Answer(
//           const Param& param, absl::FunctionRef<WatchReason(const Key&)> reason_for);
//     };
//     Round NewRound() const;  // thread-safe; looks at the state now
//   };
//
// Thread-safe. Open is called from the transport's handlers; Refresh,
// FinishAll and size from any thread. The owner must let every stream end
// (Stream::Done) before destroying this object.
#ifndef BATON_SIDECAR_API_WATCH_STREAMS_H_
#define BATON_SIDECAR_API_WATCH_STREAMS_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/api/fanout_workers.h"
#include "sidecar/api/metrics.h"
#include "sidecar/common/clock.h"

namespace baton {

// Why a watch message is sent.
enum class WatchReason {
  kInitial,    // the first message of a stream
  kChanged,    // what the stream is told about changed
  kHeartbeat,  // nothing changed for a heartbeat interval
};

// A message answered for one stream, and what it says.
template <typename Response, typename Key>
struct WatchAnswer {
  std::shared_ptr<const Response> message;
  Key key;
};

struct WatchStreamsOptions {
  // Open streams beyond which new ones are refused (ResourceExhausted).
  int max_streams = 1024;
  // Requested heartbeat intervals below this are raised to it; heartbeats may
  // go out up to half of it early, so one Refresh serves every stream due
  // around the same time.
  absl::Duration min_heartbeat_interval = absl::Milliseconds(100);
  // Threads (the caller included) that start the writes of one large fan-out
  // in parallel (FanOutWorkers).
  int fanout_threads = 1;
  // Whether these streams count in the baton_grpc_watchers gauge.
  bool count_as_watchers = false;
  // Times the heartbeats; the caller's Refresh schedule waits on it too.
  const Clock* clock = SystemClock();
};

template <typename Source>
class WatchStreams {
 public:
  using Response = typename Source::Response;
  using Key = typename Source::Key;
  using Param = typename Source::Param;
  using Answer = WatchAnswer<Response, Key>;

  // One stream, as its transport implements it. The transport derives from
  // it, implements Send and End, hands it to Open, and reports what happens
  // to it through WriteDone, Cancelled and Done.
  //
  // Contract between the two sides:
  //  * WatchStreams calls Send and End from any thread, never with a lock of
  //    its own held, never two at once for one stream, and never again after
  //    End. End comes once, only when no Send is outstanding.
  //  * The transport calls WriteDone exactly once after each Send (also when
  //    the write failed or was abandoned), Cancelled whenever the client goes
  //    away (any number of times, any thread), and Done once, after End, when
  //    it has finished with the stream. It may destroy the stream once Done
  //    returned, not before.
  class Stream {
   public:
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

   protected:
    Stream() = default;
    ~Stream() = default;

    // Sends `message`, which stays alive until WriteDone.
    virtual void Send(const Response& message) = 0;
    // Ends the stream: OK after FinishAll (an orderly end); otherwise the
    // reason it is refused (nothing was sent) or why it broke (the client
    // went away: CANCELLED, or a write failed: UNAVAILABLE).
    virtual void End(const absl::Status& status) = 0;

    // The message of the last Send is written (ok) or will never be.
    void WriteDone(bool ok) {
      {
        absl::MutexLock lock(&mu_);
        in_flight_.reset();
        if (!ok) Close(absl::UnavailableError("write failed"));
      }
      // The stream stays reserved (writing_) while the state is looked at
      // again, outside the lock: a Round may call the daemon's hooks.
      bool finish = false;
      for (;;) {
        {
          absl::MutexLock lock(&mu_);
          if (state_ == State::kClosing || !stale_) {
            writing_ = false;
            finish = ClaimFinishLocked();
            break;
          }
          stale_ = false;
        }
        typename Source::Round round = streams_->source_->NewRound();
        if (round.Probe(param_) == LastKey()) continue;
        StartPrepared(round.Answer(param_, [](const Key&) { return WatchReason::kChanged; }));
        return;
      }
      if (finish) FinishNow();
    }

    // The client went away.
    void Cancelled() {
      bool finish;
      {
        absl::MutexLock lock(&mu_);
        Close(absl::CancelledError("the client went away"));
        finish = ClaimFinishLocked();
      }
      if (finish) FinishNow();
    }

    // The transport has finished with the stream (after End).
    void Done() {
      if (registered_) streams_->Unregister(this);
    }

   private:
    friend class WatchStreams;
    enum class State {
      kOpen,      // sending changes and heartbeats
      kDraining,  // shutdown: finish with OK once nothing is owed
      kClosing,   // the client is gone: finish as soon as no write is pending
    };

    // Set by Open before the stream is registered, constant after.
    void Init(WatchStreams* streams, Param param, absl::Duration heartbeat) {
      streams_ = streams;
      param_ = std::move(param);
      heartbeat_ = heartbeat;
      slack_ = streams->options_.min_heartbeat_interval / 2;
    }

    // Ends the stream at once with `status` (never registered).
    void Refuse(const absl::Status& status) {
      {
        absl::MutexLock lock(&mu_);
        finish_called_ = true;
      }
      End(status);
    }

    // Sends the first message. Called once, after Register succeeded.
    void Begin() {
      registered_ = true;
      typename Source::Round round = streams_->source_->NewRound();
      StartPrepared(round.Answer(param_, [](const Key&) { return WatchReason::kInitial; }));
    }

    // Decides whether this stream is owed a message in `round`; lowers
    // *next_due to when its next heartbeat is due. Returns true if it is: the
    // stream is then reserved for the caller, who must call AnswerPrepared
    // and StartPrepared without holding the lock of WatchStreams.
    bool Prepare(const typename Source::Round& round, MonoTime now, MonoTime* next_due) {
      absl::MutexLock lock(&mu_);
      if (state_ != State::kOpen) return false;
      const bool differs = !(round.Probe(param_) == last_key_);
      const bool heartbeats = heartbeat_ > absl::ZeroDuration();
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

    // For a stream Prepare reserved: its message, answered from `round` now.
    Answer AnswerPrepared(typename Source::Round& round) {
      return round.Answer(param_, [this](const Key& key) {
        absl::MutexLock lock(&mu_);
        return owes_change_ || !(key == last_key_) ? WatchReason::kChanged
                                                   : WatchReason::kHeartbeat;
      });
    }

    // For a reserved stream: sends `answer`.
    void StartPrepared(Answer answer) {
      const Response* message = answer.message.get();
      {
        absl::MutexLock lock(&mu_);
        last_key_ = std::move(answer.key);
        last_send_ = streams_->options_.clock->Monotonic();
        in_flight_ = std::move(answer.message);
      }
      Send(*message);
    }

    // Shutdown: finish with OK after what is owed has been written. Returns
    // true if the caller must call FinishNow() (without the lock of
    // WatchStreams).
    bool Drain() {
      absl::MutexLock lock(&mu_);
      if (state_ == State::kOpen) {
        state_ = State::kDraining;
        final_status_ = absl::OkStatus();
      }
      return ClaimFinishLocked();
    }

    void FinishNow() {
      absl::Status status;
      {
        absl::MutexLock lock(&mu_);
        status = final_status_;
      }
      End(status);
    }

    Key LastKey() {
      absl::MutexLock lock(&mu_);
      return last_key_;
    }

    MonoTime HeartbeatDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return last_send_ + (heartbeat_ - slack_);
    }

    void Close(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
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

    WatchStreams* streams_ = nullptr;
    Param param_;
    absl::Duration heartbeat_;  // zero: no heartbeats
    absl::Duration slack_;
    // Read without the lock in Done, after every other call has returned.
    bool registered_ = false;

    absl::Mutex mu_;
    State state_ ABSL_GUARDED_BY(mu_) = State::kOpen;
    // A write is outstanding (or, before Begin, about to be), or the stream
    // is reserved for one: End waits.
    bool writing_ ABSL_GUARDED_BY(mu_) = true;
    std::shared_ptr<const Response> in_flight_ ABSL_GUARDED_BY(mu_);
    // The state changed while a write was outstanding; look again after it.
    bool stale_ ABSL_GUARDED_BY(mu_) = false;
    // Prepare reserved the stream because the state changed (not a heartbeat).
    bool owes_change_ ABSL_GUARDED_BY(mu_) = false;
    Key last_key_ ABSL_GUARDED_BY(mu_){};
    MonoTime last_send_ ABSL_GUARDED_BY(mu_);
    bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
    absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  };

  // `source` and `metrics` must outlive this object.
  WatchStreams(WatchStreamsOptions options, const Source* source, Metrics* metrics)
      : options_(options),
        source_(source),
        metrics_(metrics),
        fanout_(options_.fanout_threads, kMinParallelWrites) {}

  WatchStreams(const WatchStreams&) = delete;
  WatchStreams& operator=(const WatchStreams&) = delete;

  // Opens `stream` (not owned; alive until its Done) on `param`, with a
  // heartbeat every `heartbeat` (zero: none; raised to the minimum). If
  // `refusal` is not OK, or the limit is reached (ResourceExhausted), or
  // FinishAll has begun (Unavailable), the stream is ended at once with the
  // reason and sent nothing; otherwise it is sent its first message now.
  void Open(Stream* stream, Param param, absl::Duration heartbeat,
            absl::Status refusal = absl::OkStatus()) {
    if (heartbeat > absl::ZeroDuration()) {
      heartbeat = std::max(heartbeat, options_.min_heartbeat_interval);
    }
    stream->Init(this, std::move(param), heartbeat);
    if (refusal.ok()) refusal = Register(stream);
    if (!refusal.ok()) {
      stream->Refuse(refusal);
    } else {
      stream->Begin();
    }
  }

  // Sends every stream what it is owed now (see the file comment). Returns
  // how long until the next heartbeat may be due (InfiniteDuration if no
  // stream asked for heartbeats); call again by then. Never blocks on a
  // client.
  absl::Duration Refresh() {
    typename Source::Round round = source_->NewRound();
    const MonoTime now = options_.clock->Monotonic();
    MonoTime next_due = MonoTime::InfiniteFuture();
    std::vector<Stream*> owed;
    {
      absl::MutexLock lock(&mu_);
      for (Stream* stream : streams_) {
        if (stream->Prepare(round, now, &next_due)) owed.push_back(stream);
      }
    }
    std::vector<Answer> answers;
    answers.reserve(owed.size());
    for (Stream* stream : owed) answers.push_back(stream->AnswerPrepared(round));
    // Outside the lock: a write may complete, and even end the stream,
    // inline on the thread that starts it.
    fanout_.Run(owed.size(), [&](size_t i) { owed[i]->StartPrepared(std::move(answers[i])); });

    if (next_due == MonoTime::InfiniteFuture()) return absl::InfiniteDuration();
    return std::max(next_due - now, absl::ZeroDuration());
  }

  // Shutdown: refuses new streams (Unavailable) and ends every open stream
  // with OK once the state it is owed has been written. Call Refresh() first
  // so the latest state is among what is owed. Returns without waiting for
  // the streams to end.
  void FinishAll() {
    std::vector<Stream*> to_finish;
    {
      absl::MutexLock lock(&mu_);
      finishing_ = true;
      for (Stream* stream : streams_) {
        if (stream->Drain()) to_finish.push_back(stream);
      }
    }
    for (Stream* stream : to_finish) stream->FinishNow();
  }

  // Open streams.
  int size() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(streams_.size());
  }

 private:
  // Below this many writes, waking the fan-out helpers costs more than it
  // saves.
  static constexpr size_t kMinParallelWrites = 64;

  // Admits a new stream unless at the limit or finishing; the status to
  // refuse it with otherwise.
  absl::Status Register(Stream* stream) {
    {
      absl::MutexLock lock(&mu_);
      if (finishing_) return absl::UnavailableError("the sidecar is shutting down");
      if (streams_.size() >= static_cast<size_t>(options_.max_streams)) {
        return absl::ResourceExhaustedError("too many watch streams on this sidecar");
      }
      streams_.insert(stream);
    }
    if (options_.count_as_watchers) metrics_->AddWatchers(1);
    return absl::OkStatus();
  }

  void Unregister(Stream* stream) {
    {
      absl::MutexLock lock(&mu_);
      streams_.erase(stream);
    }
    if (options_.count_as_watchers) metrics_->AddWatchers(-1);
  }

  const WatchStreamsOptions options_;
  const Source* const source_;
  Metrics* const metrics_;
  FanOutWorkers fanout_;

  mutable absl::Mutex mu_;
  absl::flat_hash_set<Stream*> streams_ ABSL_GUARDED_BY(mu_);
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_WATCH_STREAMS_H_

#include "sidecar/api/leadership_watch_source.h"

#include <string>
#include <utility>

#include "baton/v1/leader_election.pb.h"

namespace baton {
namespace {

LeadershipWatchKey KeyOf(const Leadership& l, MonoTime now) {
  return LeadershipWatchKey{l.IsLeader(now), l.stepping_down,   l.observed,
                            l.fencing_token, l.holder_identity, l.lease_uid};
}

}  // namespace

template <typename Message>
LeadershipWatchSource<Message>::Round::Round(const ApiContext* context, Format format)
    : api_(context),
      format_(format),
      now_(context->clock->Monotonic()),
      probe_(KeyOf(context->publisher->Current().leadership, now_)) {}

template <typename Message>
WatchAnswer<Message, LeadershipWatchKey> LeadershipWatchSource<Message>::Round::Answer(
    const Reader& reader, absl::FunctionRef<WatchReason(const Key&)> reason_for) {
  const LeaderAnswer answer = api_.AnswerAt(reader, now_);
  Key key = KeyOf(answer.leadership(), now_);
  const WatchReason reason = reason_for(key);
  const MonoTime deadline = answer.leadership().leader_until;
  for (const Built& b : built_) {
    if (b.version == answer.version() && b.deadline == deadline && b.reason == reason) {
      return {b.message, std::move(key)};
    }
  }
  auto message = std::make_shared<const Message>(format_(answer, reason));
  built_.push_back(Built{answer.version(), deadline, reason, message});
  return {std::move(message), std::move(key)};
}

// The two kinds of leadership stream: gRPC WatchLeadership and HTTP
// GET /leader/watch (Server-Sent Events frames).
template class LeadershipWatchSource<v1::WatchLeadershipResponse>;
template class LeadershipWatchSource<std::string>;

}  // namespace baton

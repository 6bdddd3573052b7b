// LeadershipWatchSource: what leadership watch streams watch (a WatchStreams
// Source, watch_streams.h): the published snapshot, told as one of two
// message formats, gRPC's WatchLeadershipResponse or the Server-Sent Events
// frame of GET /leader/watch. Both kinds of stream therefore decide what is
// news in the same way: a stream is owed a message when the holder, the
// fencing token, is_leader (including when the guarantee runs out with time
// alone), stepping_down, observed or the Lease uid differ from what its last
// message said. Renew-only changes (renew_time, valid_for) are not news.
//
// A stream's param is its Reader. Every message is built from
// LocalApi::AnswerAt for that reader at the moment it is built, so a message
// that says leader is a promise on the ledger before it is sent.
#ifndef BATON_SIDECAR_API_LEADERSHIP_WATCH_SOURCE_H_
#define BATON_SIDECAR_API_LEADERSHIP_WATCH_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "sidecar/api/api_context.h"
#include "sidecar/api/local_api.h"
#include "sidecar/api/watch_streams.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"

namespace baton {

// What a leadership watcher is told about when it changes.
struct LeadershipWatchKey {
  bool is_leader = false;
  bool stepping_down = false;
  bool observed = false;
  int64_t fencing_token = 0;
  std::string holder_identity;
  std::string lease_uid;
  friend bool operator==(const LeadershipWatchKey&, const LeadershipWatchKey&) = default;
};

// `Message` is the stream's message type; the format function turns a
// snapshot, evaluated at `now`, into the message for `reason`.
template <typename Message>
class LeadershipWatchSource {
 public:
  using Response = Message;
  using Key = LeadershipWatchKey;
  using Param = Reader;
  using Format = Message (*)(const LeaderAnswer& answer, WatchReason reason);

  // The snapshot at one instant. Every stream answered from one Round gets
  // its own answer (LocalApi::AnswerAt, for that stream's reader), but
  // streams answered with the same snapshot version, deadline and reason
  // share one message.
  class Round {
   public:
    Round(const ApiContext* context, Format format);
    // What any stream would be told now; promises nothing.
    const Key& Probe(const Reader&) const { return probe_; }
    WatchAnswer<Response, Key> Answer(const Reader& reader,
                                      absl::FunctionRef<WatchReason(const Key&)> reason_for);

   private:
    struct Built {
      uint64_t version;
      MonoTime deadline;
      WatchReason reason;
      std::shared_ptr<const Response> message;
    };
    const LocalApi api_;
    const Format format_;
    const MonoTime now_;
    const Key probe_;
    std::vector<Built> built_;
  };

  // `context` must outlive the source.
  LeadershipWatchSource(const ApiContext* context, Format format)
      : context_(context), format_(format) {}
  Round NewRound() const { return Round(context_, format_); }

 private:
  const ApiContext* const context_;
  const Format format_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_LEADERSHIP_WATCH_SOURCE_H_

// LocalApi: baton's local API once, whatever carries it. The HTTP routes
// (http_router.h), both kinds of watch stream (leadership_watch_source.h) and
// the gRPC service (leader_election_service.h) only translate between their
// wire format and these calls; which reader may ask what, what an answer
// promises, and what resigning and acknowledging do are decided here.
//
// Every leader answer is a LeaderAnswer, which only the publisher's Promise
// makes, after recording its promise; this class is where the servers get
// them.
//
// Thread-safe, and never blocks: the hooks it calls promise to be quick.
#ifndef BATON_SIDECAR_API_LOCAL_API_H_
#define BATON_SIDECAR_API_LOCAL_API_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "baton/v1/leader_election.pb.h"
#include "sidecar/api/api_context.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"

namespace baton {

// The longest client_id a reader may name itself with.
inline constexpr size_t kMaxClientIdLength = 64;

// OK if `client_id` is 1 to kMaxClientIdLength characters of [A-Za-z0-9._-];
// otherwise InvalidArgument with a short reason.
absl::Status ValidateClientId(std::string_view client_id);

// The finest step of a bounded promise's deadline (Reader::max_valid_for):
// deadlines are rounded down to it, so that answers to bounded readers
// within one step carry the same deadline (and may share a rendered body),
// and the shortest bound a reader may ask for.
inline constexpr absl::Duration kBoundedDeadlineStep = absl::Milliseconds(1);

// Who asks for leadership (GetLeadership, WatchLeadership, GET /leader, its
// watch, GET /), as the request names it.
struct Reader {
  std::string client_id;  // empty: anonymous
  // The longest promise the reader wants: a leader answer's deadline is then
  // at most this far ahead (rounded down to kBoundedDeadlineStep). Unset: as
  // long as this sidecar can promise, except for the unary answers to an
  // unnamed reader (Get), which default to ApiContext::max_unnamed_valid_for.
  std::optional<absl::Duration> max_valid_for;
};

class LocalApi {
 public:
  // `context` must outlive the API.
  explicit LocalApi(const ApiContext* context) : context_(context) {}

  // OK for an anonymous reader or a well-formed name, with no bound or one of
  // at least kBoundedDeadlineStep; InvalidArgument with a short reason
  // otherwise. What Get checks, for a watch to check once when it opens.
  static absl::Status Validate(const Reader& reader);

  // GetLeadership / GET /leader / GET /: the answer to `reader` now (the
  // promise it carries recorded), or InvalidArgument for a malformed reader.
  // An unnamed reader that names no bound is promised at most
  // ApiContext::max_unnamed_valid_for: it cannot acknowledge, so a
  // step-down waits for its promise to lapse.
  absl::StatusOr<LeaderAnswer> Get(const Reader& reader) const;

  // The answer to a reader already validated, at `now`: each message of a
  // watch stream. Only the reader's own bound applies: a stream is told
  // at once when its sidecar steps down.
  LeaderAnswer AnswerAt(const Reader& reader, MonoTime now) const;

  // Resign / POST /resign: whether this sidecar led when asked, and the
  // answer once the step-down has begun (ApiHooks::resign: it never waits
  // for the release). Unimplemented when the daemon offers no resign hook;
  // the hook's error as it is otherwise.
  absl::StatusOr<v1::ResignResponse> Resign() const;

  // AcknowledgeStepDown / POST /leader/ack: the reader `ack.client_id` has
  // stopped acting on what it was told (Acknowledgement). InvalidArgument if
  // the client_id is missing or malformed. ApiHooks::acknowledge if set,
  // else LeadershipPublisher::Acknowledge at the clock's now; `acknowledged`
  // says whether that settled the reader.
  absl::StatusOr<v1::AcknowledgeStepDownResponse> Acknowledge(const Acknowledgement& ack) const;

 private:
  // `reader`, bounded by ApiContext::max_unnamed_valid_for if it is unnamed
  // and asked for no bound of its own.
  Reader WithUnnamedBound(Reader reader) const;

  const ApiContext* const context_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_LOCAL_API_H_

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
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// Who asks for leadership (GetLeadership, WatchLeadership, GET /leader, its
// watch, GET /), as the request names it.
struct Reader {
  std::string client_id;  // empty: anonymous
};

class LocalApi {
 public:
  // `context` must outlive the API.
  explicit LocalApi(const ApiContext* context) : context_(context) {}

  // OK for an anonymous reader or a well-formed name; InvalidArgument with a
  // short reason otherwise. What Get checks, for a watch to check once when
  // it opens.
  static absl::Status Validate(const Reader& reader);

  // GetLeadership / GET /leader / GET /: the answer to `reader` now (the
  // promise it carries recorded), or InvalidArgument for a malformed reader.
  absl::StatusOr<LeaderAnswer> Get(const Reader& reader) const;

  // The answer to a reader already validated, at `now`: each message of a
  // watch stream.
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
  const ApiContext* const context_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_LOCAL_API_H_

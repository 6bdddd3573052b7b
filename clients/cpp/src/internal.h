// The pure parts of the C++ client, apart from the gRPC calls that use them:
// converting answers, judging their validity at a given clock reading, and
// mapping failed calls. The client uses them with BootClock::now(); the
// conformance tests (clients/conformance) with the vectors' readings.
#ifndef BATON_CLIENT_SRC_INTERNAL_H_
#define BATON_CLIENT_SRC_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "baton/client/client.h"
#include "baton/v1/leader_election.pb.h"
#include "grpcpp/support/status.h"

namespace baton::client::internal {

// Converts an answer; `since` is when its validity starts counting if the
// sidecar sent no deadline of its own. kInvalidArgument for a malformed
// fencing revision (see ParseLeadershipJson in client.h).
absl::StatusOr<Leadership> FromProto(const v1::Leadership& m, BootClock::time_point since);

// Converts a GET /leader body (proto3 JSON; unknown fields ignored), as
// FromProto; kInvalidArgument for anything else.
absl::StatusOr<Leadership> ParseLeadershipJson(absl::string_view body, BootClock::time_point since);

// Leadership::Remaining at the BootClock reading `now`.
absl::Duration RemainingAt(const Leadership& l, BootClock::time_point now);

// Client::RequireLeader's decision on `l` at `now`: its token if it leads
// with at least `min_validity` (and some) left, else the not-leader status.
absl::StatusOr<int32_t> RequireLeaderAt(const Leadership& l, absl::Duration min_validity,
                                        BootClock::time_point now);

// The promise Client::RequireLeader(min_validity) asks the sidecar for:
// min_validity (none if negative) plus kRequireLeaderSlack.
absl::Duration RequireLeaderBound(absl::Duration min_validity);

// The one mapping from gRPC statuses to absl on this boundary: anything that
// means "no usable sidecar here" is kUnavailable with a message that says
// what to check; other codes keep theirs.
absl::Status Translate(const std::string& addr, const grpc::Status& status);

}  // namespace baton::client::internal

#endif  // BATON_CLIENT_SRC_INTERNAL_H_

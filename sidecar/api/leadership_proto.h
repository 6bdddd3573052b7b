// Conversion from an answer of the election engine (LeaderAnswer) to the public
// baton.v1.Leadership message that both local servers answer with, and back
// from the deadline an acknowledgement names to the engine's clock.
//
// The snapshot does not store whether this pod leads; the conversion decides
// it (and how long that is guaranteed) from the clock at the moment it runs,
// so every answer reflects the time it is given, not the time the snapshot was
// published.
#ifndef BATON_SIDECAR_API_LEADERSHIP_PROTO_H_
#define BATON_SIDECAR_API_LEADERSHIP_PROTO_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "baton/v1/leader_election.pb.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"

namespace baton {

// Fills `out` (cleared first) from `answer`, evaluating is_leader and
// valid_for at the monotonic instant `at`. valid_until_boottime is the
// answer's leader_until (an absolute CLOCK_BOOTTIME reading with the system
// clock) while is_leader, zero otherwise. Thread-safe; does no I/O.
//
// `at` is normally answer.at(). A cached answer is evaluated at the end of the
// window it will be served in: an answer evaluated later than it is served
// only ever understates leadership (valid_for; valid_until_boottime is the
// same absolute deadline either way).
void LeadershipToProto(const LeaderAnswer& answer, MonoTime at, v1::Leadership* out);

// The proto3 JSON form of `message` as the HTTP API serves it: lowerCamelCase
// names and every scalar printed even when zero/false. One line, no trailing
// newline.
std::string ToJson(const google::protobuf::Message& message);

// ToJson of the baton.v1.Leadership of `answer` evaluated at `at`: the
// Leadership JSON that GET /leader (plus a newline) and every event of
// GET /leader/watch carry. One line.
std::string LeadershipJson(const LeaderAnswer& answer, MonoTime at);

// The monotonic instant a valid_until_boottime names, as an
// acknowledgement carries it back (Acknowledgement::up_to): the inverse of
// what LeadershipToProto writes, at its nanosecond resolution.
// InvalidArgument for a negative or malformed Duration.
absl::StatusOr<MonoTime> DeadlineFromProto(const google::protobuf::Duration& deadline);

// The same for the proto3 JSON text of such a Duration, as GET /leader
// prints validUntilBoottime ("12345.678901234s"), for POST /leader/ack.
absl::StatusOr<MonoTime> ParseDeadline(std::string_view text);

}  // namespace baton

#endif  // BATON_SIDECAR_API_LEADERSHIP_PROTO_H_

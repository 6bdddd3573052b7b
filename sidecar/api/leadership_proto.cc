#include "sidecar/api/leadership_proto.h"

#include <cstdint>
#include <limits>
#include <string>

#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace baton {
namespace {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

google::protobuf::Duration ToDuration(absl::Duration d) {
  return TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(d));
}

// The token comes from leaseTransitions, an int32 in the Lease; the snapshot
// widens it. Clamp rather than wrap should that ever stop being true, so a
// token can never appear to go backwards.
int32_t NarrowToken(int64_t token) {
  if (token < 0) return 0;
  if (token > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(token);
}

}  // namespace

void LeadershipToProto(const LeaderAnswer& answer, MonoTime at, v1::Leadership* out) {
  const Leadership& snapshot = answer.leadership();
  out->Clear();
  const bool leader = snapshot.IsLeader(at);
  out->set_is_leader(leader);
  *out->mutable_valid_for() = ToDuration(snapshot.ValidFor(at));
  // MonoTime is CLOCK_BOOTTIME (time since boot) for SystemClock, so
  // leader_until is the node's boot-time reading at which the guarantee ends:
  // the same absolute deadline whatever instant the answer is evaluated at.
  // Set (to zero) even when not leader, so the JSON always carries it.
  *out->mutable_valid_until_boottime() =
      ToDuration(leader ? snapshot.leader_until.SinceOrigin() : absl::ZeroDuration());
  out->set_identity(snapshot.identity);
  out->set_holder_identity(snapshot.holder_identity);
  out->set_fencing_token(NarrowToken(snapshot.fencing_token));
  // Both fields: the int64 for readers older than the decimal one, 0 where
  // the value does not fit it.
  const std::optional<ResourceVersion>& revision = snapshot.fencing_revision;
  out->set_fencing_revision(revision ? revision->AsInt64().value_or(0) : 0);
  out->set_fencing_revision_decimal(revision ? revision->digits() : "0");
  out->set_lease_name(snapshot.lease_name);
  out->set_lease_namespace(snapshot.lease_namespace);
  out->set_lease_uid(snapshot.lease_uid);
  if (snapshot.acquire_time) *out->mutable_acquire_time() = ToTimestamp(*snapshot.acquire_time);
  if (snapshot.renew_time) *out->mutable_renew_time() = ToTimestamp(*snapshot.renew_time);
  if (snapshot.lease_duration_seconds > 0) {
    *out->mutable_lease_duration() = ToDuration(absl::Seconds(snapshot.lease_duration_seconds));
  }
  out->set_observed(snapshot.observed);
  out->set_stepping_down(snapshot.stepping_down);
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = false;
  std::string json;
  // Printing a well-formed generated message cannot fail; the status only
  // reports unresolvable Any types, which this schema does not use.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

absl::StatusOr<MonoTime> DeadlineFromProto(const google::protobuf::Duration& deadline) {
  if (deadline.seconds() < 0 || deadline.nanos() < 0 || deadline.nanos() >= 1'000'000'000 ||
      deadline.seconds() > TimeUtil::kDurationMaxSeconds) {
    return absl::InvalidArgumentError(
        "valid_until_boottime must be a non-negative duration, the validUntilBoottime of an "
        "answer");
  }
  return MonoTime::FromSinceOrigin(absl::Seconds(deadline.seconds()) +
                                   absl::Nanoseconds(deadline.nanos()));
}

absl::StatusOr<MonoTime> ParseDeadline(std::string_view text) {
  google::protobuf::Duration deadline;
  if (!TimeUtil::FromString(std::string(text), &deadline)) {
    return absl::InvalidArgumentError(
        "valid_until_boottime must be a duration in seconds such as 12345.678901234s, the "
        "validUntilBoottime of an answer");
  }
  return DeadlineFromProto(deadline);
}

std::string LeadershipJson(const LeaderAnswer& answer, MonoTime at) {
  v1::Leadership message;
  LeadershipToProto(answer, at, &message);
  return ToJson(message);
}

}  // namespace baton

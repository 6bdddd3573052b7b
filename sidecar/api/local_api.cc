#include "sidecar/api/local_api.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sidecar/api/leadership_proto.h"

namespace baton {

absl::Status ValidateClientId(std::string_view client_id) {
  if (client_id.empty()) return absl::InvalidArgumentError("client_id is empty");
  if (client_id.size() > kMaxClientIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("client_id is longer than ", kMaxClientIdLength, " characters"));
  }
  const bool allowed = std::all_of(client_id.begin(), client_id.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (!allowed) return absl::InvalidArgumentError("client_id may contain only [A-Za-z0-9._-]");
  return absl::OkStatus();
}

absl::Status LocalApi::Validate(const Reader& reader) {
  if (reader.max_valid_for && *reader.max_valid_for < kBoundedDeadlineStep) {
    return absl::InvalidArgumentError(absl::StrCat("max_valid_for must be at least ",
                                                   absl::FormatDuration(kBoundedDeadlineStep)));
  }
  return reader.client_id.empty() ? absl::OkStatus() : ValidateClientId(reader.client_id);
}

absl::StatusOr<LeaderAnswer> LocalApi::Get(const Reader& reader) const {
  if (absl::Status valid = Validate(reader); !valid.ok()) return valid;
  return AnswerAt(WithUnnamedBound(reader), context_->clock->Monotonic());
}

LeaderAnswer LocalApi::AnswerAt(const Reader& reader, MonoTime now) const {
  MonoTime at_most = MonoTime::InfiniteFuture();
  if (reader.max_valid_for && *reader.max_valid_for != absl::InfiniteDuration()) {
    // At least one step ahead (Validate), so never at or before `now`.
    at_most = MonoTime::FromSinceOrigin(
        absl::Floor((now + *reader.max_valid_for).SinceOrigin(), kBoundedDeadlineStep));
  }
  return context_->publisher->Promise(reader.client_id, now, at_most);
}

Reader LocalApi::WithUnnamedBound(Reader reader) const {
  if (reader.client_id.empty() && !reader.max_valid_for) {
    reader.max_valid_for = context_->max_unnamed_valid_for;
  }
  return reader;
}

absl::StatusOr<v1::ResignResponse> LocalApi::Resign() const {
  if (!context_->hooks.resign) return absl::UnimplementedError("resign is not enabled");
  v1::ResignResponse response;
  response.set_was_leader(
      context_->publisher->Current().leadership.IsLeader(context_->clock->Monotonic()));
  if (absl::Status status = context_->hooks.resign(); !status.ok()) return status;
  // Built like any other answer: should the hook have left it leading, the
  // promise is on the ledger.
  const LeaderAnswer answer = AnswerAt(WithUnnamedBound(Reader{}), context_->clock->Monotonic());
  LeadershipToProto(answer, answer.at(), response.mutable_leadership());
  return response;
}

absl::StatusOr<v1::AcknowledgeStepDownResponse> LocalApi::Acknowledge(
    const Acknowledgement& ack) const {
  if (ack.client_id.empty()) return absl::InvalidArgumentError("client_id is required");
  if (absl::Status valid = ValidateClientId(ack.client_id); !valid.ok()) return valid;
  v1::AcknowledgeStepDownResponse response;
  response.set_acknowledged(context_->hooks.acknowledge ? context_->hooks.acknowledge(ack)
                                                        : context_->publisher->Acknowledge(
                                                              ack, context_->clock->Monotonic()));
  return response;
}

}  // namespace baton

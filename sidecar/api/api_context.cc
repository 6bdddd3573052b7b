#include "sidecar/api/api_context.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace baton {

absl::Status CheckLiveness(const ApiContext& context) {
  if (context.hooks.liveness) return context.hooks.liveness();
  return absl::OkStatus();
}

absl::Status CheckReadiness(const ApiContext& context) {
  if (context.hooks.readiness) return context.hooks.readiness();
  if (!context.publisher->Current().leadership.observed) {
    return absl::UnavailableError("the Lease has not been read yet");
  }
  return absl::OkStatus();
}

bool AcknowledgeStepDown(const ApiContext& context, const Acknowledgement& ack) {
  if (context.hooks.acknowledge) return context.hooks.acknowledge(ack);
  return context.publisher->Acknowledge(ack, context.clock->Monotonic());
}

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

}  // namespace baton

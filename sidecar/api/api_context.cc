#include "sidecar/api/api_context.h"

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

}  // namespace baton

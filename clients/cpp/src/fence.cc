#include "baton/client/fence.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace baton::client {

absl::StatusOr<int32_t> ParseToken(absl::string_view text) {
  int32_t token = 0;
  // SimpleAtoi accepts a sign and surrounding spaces; a token is digits only.
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
  if (!digits || !absl::SimpleAtoi(text, &token)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTokenHeader, " \"", text, "\" is not a fencing token"));
  }
  return token;
}

absl::Status Fence::Admit(int32_t token) {
  absl::MutexLock lock(&mu_);
  if (highest_.has_value() && token < *highest_) {
    return absl::AbortedError(absl::StrCat("stale fencing token ", token,
                                           ": a write with token ", *highest_,
                                           " was already accepted"));
  }
  highest_ = token;
  return absl::OkStatus();
}

std::optional<int32_t> Fence::Highest() const {
  absl::MutexLock lock(&mu_);
  return highest_;
}

}  // namespace baton::client

#include "baton/client/fence.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace baton::client {

namespace {

template <typename Int>
absl::StatusOr<Int> ParseDigits(absl::string_view text, absl::string_view header) {
  Int value = 0;
  // SimpleAtoi accepts a sign and surrounding spaces; a token is digits only.
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
  if (!digits || !absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(header, " \"", text, "\" is not a fencing token"));
  }
  return value;
}

}  // namespace

absl::StatusOr<int32_t> ParseToken(absl::string_view text) {
  return ParseDigits<int32_t>(text, kTokenHeader);
}

absl::StatusOr<int64_t> ParseRevision(absl::string_view text) {
  return ParseDigits<int64_t>(text, kRevisionHeader);
}

absl::Status Fence::Admit(int64_t token) {
  absl::MutexLock lock(&mu_);
  if (highest_.has_value() && token < *highest_) {
    return absl::AbortedError(absl::StrCat("stale fencing token ", token, ": a write with token ",
                                           *highest_, " was already accepted"));
  }
  highest_ = token;
  return absl::OkStatus();
}

std::optional<int64_t> Fence::Highest() const {
  absl::MutexLock lock(&mu_);
  return highest_;
}

}  // namespace baton::client

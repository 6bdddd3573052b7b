#include "baton/client/fence.h"

#include <algorithm>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace baton::client {

namespace {

absl::Status NotAFencingValue(absl::string_view text, absl::string_view header) {
  return absl::InvalidArgumentError(absl::StrCat(header, " \"", text, "\" is not a fencing token"));
}

template <typename Int>
absl::StatusOr<Int> ParseDigits(absl::string_view text, absl::string_view header) {
  Int value = 0;
  // SimpleAtoi accepts a sign and surrounding spaces; a token is digits only.
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
  if (!digits || !absl::SimpleAtoi(text, &value)) return NotAFencingValue(text, header);
  return value;
}

}  // namespace

absl::StatusOr<int32_t> ParseToken(absl::string_view text) {
  return ParseDigits<int32_t>(text, kTokenHeader);
}

absl::StatusOr<absl::uint128> ParseRevision(absl::string_view text) {
  // Nor a leading zero: a revision has one spelling ("0" for zero).
  if (text.size() > 1 && text[0] == '0') return NotAFencingValue(text, kRevisionHeader);
  return ParseDigits<absl::uint128>(text, kRevisionHeader);
}

std::string FormatRevision(absl::uint128 revision) {
  std::ostringstream digits;
  digits << revision;
  return digits.str();
}

absl::Status Fence::Admit(absl::uint128 token) {
  absl::MutexLock lock(&mu_);
  if (highest_.has_value() && token < *highest_) {
    return absl::AbortedError(absl::StrCat("stale fencing token ", FormatRevision(token),
                                           ": a write with token ", FormatRevision(*highest_),
                                           " was already accepted"));
  }
  highest_ = token;
  return absl::OkStatus();
}

std::optional<absl::uint128> Fence::Highest() const {
  absl::MutexLock lock(&mu_);
  return highest_;
}

}  // namespace baton::client

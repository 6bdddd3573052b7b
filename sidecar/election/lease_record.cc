#include "sidecar/election/lease_record.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace baton {
namespace {

// 2^128 - 1 has 39 decimal digits.
constexpr size_t kMaxDigits = 39;

}  // namespace

std::optional<ResourceVersion> ResourceVersion::Parse(std::string_view rv) {
  if (rv.empty() || rv.size() > kMaxDigits || (rv.size() > 1 && rv[0] == '0')) return std::nullopt;
  for (char c : rv) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return ResourceVersion(rv);
}

std::optional<int64_t> ResourceVersion::AsInt64() const {
  int64_t n = 0;
  if (!absl::SimpleAtoi(digits_, &n)) return std::nullopt;
  return n;
}

}  // namespace baton

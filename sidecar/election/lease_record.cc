#include "sidecar/election/lease_record.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace baton {
namespace {

// 2^128 - 1, the largest resourceVersion KEP-5504 allows.
constexpr std::string_view kMax = "340282366920938463463374607431768211455";

}  // namespace

std::optional<ResourceVersion> ResourceVersion::Parse(std::string_view rv) {
  if (rv.empty() || rv.size() > kMax.size() || (rv.size() > 1 && rv[0] == '0')) return std::nullopt;
  for (char c : rv) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  // As long as the maximum: digits compare as the numbers do.
  if (rv.size() == kMax.size() && rv > kMax) return std::nullopt;
  int64_t n = 0;
  const bool fits = absl::SimpleAtoi(absl::string_view(rv.data(), rv.size()), &n);
  return ResourceVersion(rv, fits ? std::optional<int64_t>(n) : std::nullopt);
}

}  // namespace baton

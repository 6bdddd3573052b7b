#include "sidecar/election/lease_record.h"

namespace baton {

std::optional<int64_t> ResourceVersionNumber(std::string_view rv) {
  if (rv.empty() || rv.size() > 18 || (rv.size() > 1 && rv[0] == '0')) return std::nullopt;
  int64_t n = 0;
  for (char c : rv) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace baton

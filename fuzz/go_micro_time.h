// IsGoMicroTime: whether a string is what the API server's metav1.MicroTime
// parser (Go's RFC3339Micro layout, UTC) accepts and what baton must write:
// "YYYY-MM-DDTHH:MM:SS.ffffffZ", a four-digit year.
#ifndef BATON_FUZZ_GO_MICRO_TIME_H_
#define BATON_FUZZ_GO_MICRO_TIME_H_

#include "absl/strings/string_view.h"

namespace baton::fuzz {

inline bool IsGoMicroTime(absl::string_view s) {
  constexpr absl::string_view kShape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  if (s.size() != kShape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (kShape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != kShape[i]) return false;
  }
  return true;
}

}  // namespace baton::fuzz

#endif  // BATON_FUZZ_GO_MICRO_TIME_H_

// MicroTime: the timestamp format of a Lease's acquireTime and renewTime
// (metav1.MicroTime), e.g. "2026-09-17T13:37:24.807518Z".
//
// The API server parses it with Go's RFC3339Micro layout: exactly six
// fractional digits and a zone. baton always writes UTC with `Z`; on reading
// it accepts only what RFC 3339 allows (optional 1-9 fractional digits, `Z` or
// a numeric offset), because a Lease is also written by other clients.
//
// Pure functions; thread-safe.
#ifndef BATON_SIDECAR_KUBE_MICRO_TIME_H_
#define BATON_SIDECAR_KUBE_MICRO_TIME_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace baton::kube {

// Formats `t` as UTC with exactly six fractional digits and `Z`, truncating
// (not rounding) below a microsecond, as Go does. `t` must be finite and in
// years 0000-9999.
std::string FormatMicroTime(absl::Time t);

// Parses an RFC 3339 timestamp: `YYYY-MM-DDTHH:MM:SS[.F{1,9}](Z|±HH:MM)`,
// upper-case `T` and `Z`, valid calendar fields. InvalidArgument otherwise,
// quoting the input.
absl::StatusOr<absl::Time> ParseMicroTime(absl::string_view text);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_MICRO_TIME_H_

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

// The instants a MicroTime can carry: years 0000 to 9999 in UTC, i.e.
// 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z.
absl::Time MicroTimeFirst();
absl::Time MicroTimeLast();

// Formats `t` as UTC with a four-digit year, exactly six fractional digits
// and `Z`, truncating (not rounding) below a microsecond, as Go does. `t`
// must be in [MicroTimeFirst(), MicroTimeLast()].
std::string FormatMicroTime(absl::Time t);

// Parses an RFC 3339 timestamp: `YYYY-MM-DDTHH:MM:SS[.F{1,9}](Z|±HH:MM)`,
// upper-case `T` and `Z`, valid calendar fields, in years 0000-9999 once
// converted to UTC (so FormatMicroTime can write it back). InvalidArgument
// otherwise, quoting the input.
absl::StatusOr<absl::Time> ParseMicroTime(absl::string_view text);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_MICRO_TIME_H_

// ReleaseStartupPages: gives the executable's start-up code back to the
// kernel once start-up is over.
//
// Starting baton touches code all over the binary: static initialisers of
// gRPC, OpenSSL and Protobuf, flag parsing, the first TLS handshake. The
// kernel maps the 64 KiB around every touched page, so an idle sidecar would
// keep nearly all of its code resident (about 11 MiB of the static binary)
// while it runs about a tenth of it. Paging those mappings out and turning
// off read-ahead for them leaves resident only the code that runs again, one
// page at a time. docs/release.md#memory has the measurements.
#ifndef BATON_SIDECAR_COMMON_STARTUP_PAGES_H_
#define BATON_SIDECAR_COMMON_STARTUP_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace baton {

// One address range of /proc/self/maps.
struct MappedRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;
};

// The read-only (code and constant) mappings of file `path` in `maps` (the
// text of /proc/PID/maps). Writable mappings are left out: their pages may
// hold the process's own changes.
std::vector<MappedRange> ReadOnlyMappingsOf(absl::string_view maps, absl::string_view path);

// Pages out the executable's read-only file mappings (MADV_PAGEOUT) after
// turning off read-ahead for them (MADV_RANDOM), and returns how many bytes
// of mappings it advised. Pages another process maps too (a second baton
// started from the same file on the same node) stay resident; the kernel
// never pages out shared pages on one process's request. Safe at any time:
// a page that is needed again is read back on its next use.
absl::StatusOr<size_t> ReleaseStartupPages();

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_STARTUP_PAGES_H_

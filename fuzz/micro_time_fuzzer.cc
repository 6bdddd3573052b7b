// MicroTime parsing (a Lease's acquireTime/renewTime, written by any client):
// whatever ParseMicroTime accepts, Abseil's RFC 3339 parser reads as the same
// instant, and FormatMicroTime writes it in the API server's format so that
// it parses back to the same microsecond.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/go_micro_time.h"
#include "sidecar/kube/micro_time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<absl::Time> t = baton::kube::ParseMicroTime(text);
  if (!t.ok()) return 0;

  absl::Time reference;
  std::string error;
  FUZZ_CHECK(absl::ParseTime(absl::RFC3339_full, text, &reference, &error));
  FUZZ_CHECK(reference == *t);

  const std::string written = baton::kube::FormatMicroTime(*t);
  FUZZ_CHECK(baton::fuzz::IsGoMicroTime(written));
  absl::StatusOr<absl::Time> back = baton::kube::ParseMicroTime(written);
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(*back <= *t && *t - *back < absl::Microseconds(1));
  return 0;
}

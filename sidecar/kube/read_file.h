// ReadFile: whole-file reads for config, CA and token files, with errors that
// name the file. Blocking; thread-safe.
#ifndef BATON_SIDECAR_KUBE_READ_FILE_H_
#define BATON_SIDECAR_KUBE_READ_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace baton::kube {

// Files baton reads are small; anything larger is refused rather than read.
inline constexpr size_t kMaxConfigFileBytes = 4 << 20;

// The contents of `path`. NotFound if it does not exist, FailedPrecondition
// if it cannot be read or is larger than `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     size_t max_bytes = kMaxConfigFileBytes);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_READ_FILE_H_

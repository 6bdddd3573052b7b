// File helpers for kube tests: a fresh temporary directory and whole-file
// writes (in place, or atomically by rename as the kubelet replaces a
// projected token). Failures abort the test binary: they are test bugs.
#ifndef BATON_SIDECAR_KUBE_TESTING_TEST_FILES_H_
#define BATON_SIDECAR_KUBE_TESTING_TEST_FILES_H_

#include <string>

#include "absl/strings/string_view.h"

namespace baton::kube::testing {

// A new empty directory under the test's temporary directory, removed with
// its contents when the test binary exits. Call from the main thread.
std::string NewTempDir();

// Writes `contents` to `path`, truncating it in place.
void WriteFile(const std::string& path, absl::string_view contents);

// Writes `contents` to a sibling file and renames it over `path`.
void ReplaceFile(const std::string& path, absl::string_view contents);

}  // namespace baton::kube::testing

#endif  // BATON_SIDECAR_KUBE_TESTING_TEST_FILES_H_

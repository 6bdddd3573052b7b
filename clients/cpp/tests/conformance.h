// The client conformance suite (clients/conformance) in the C++ client's
// tests: reporting the scenarios that passed.
#ifndef BATON_CLIENT_TESTS_CONFORMANCE_H_
#define BATON_CLIENT_TESTS_CONFORMANCE_H_

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace baton::client::conformance {

// Appends `scenario` to $BATON_CONFORMANCE_REPORT unless the running test has
// failed. Call it after the scenario's last check.
inline void Passed(absl::string_view scenario) {
  const char* path = std::getenv("BATON_CONFORMANCE_REPORT");
  if (path == nullptr || *path == '\0' || testing::Test::HasFailure()) return;
  std::ofstream(path, std::ios::app) << scenario << "\n";
}

}  // namespace baton::client::conformance

#endif  // BATON_CLIENT_TESTS_CONFORMANCE_H_

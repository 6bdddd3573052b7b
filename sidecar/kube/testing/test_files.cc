#include "sidecar/kube/testing/test_files.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "gtest/gtest.h"

namespace baton::kube::testing {

namespace {

// The directories NewTempDir made, removed when the test binary exits.
// Test binaries create them from the main thread only.
std::vector<std::string>& MadeDirs() {
  static auto* dirs = [] {
    auto* made = new std::vector<std::string>;
    std::atexit([] {
      for (const std::string& d : MadeDirs()) {
        std::error_code ignored;
        std::filesystem::remove_all(d, ignored);
      }
    });
    return made;
  }();
  return *dirs;
}

}  // namespace

std::string NewTempDir() {
  std::string pattern = ::testing::TempDir() + "/kube_test_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  MadeDirs().push_back(pattern);
  return pattern;
}

void WriteFile(const std::string& path, absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) {
    std::perror(path.c_str());
    std::abort();
  }
}

void ReplaceFile(const std::string& path, absl::string_view contents) {
  const std::string tmp = path + ".tmp";
  WriteFile(tmp, contents);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::perror("rename");
    std::abort();
  }
}

}  // namespace baton::kube::testing

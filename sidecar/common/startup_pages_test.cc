#include "sidecar/common/startup_pages.h"

#include <cstdint>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace baton {
namespace {

constexpr absl::string_view kMaps =
    "55d0c2a00000-55d0c2b00000 r--p 00000000 fd:01 1234                       /usr/bin/baton\n"
    "55d0c2b00000-55d0c3000000 r-xp 00100000 fd:01 1234                       /usr/bin/baton\n"
    "55d0c3000000-55d0c3100000 rw-p 00600000 fd:01 1234                       /usr/bin/baton\n"
    "55d0c3100000-55d0c3200000 r-xp 00000000 fd:01 99                         /usr/bin/baton2\n"
    "7f0000000000-7f0000100000 r-xp 00000000 fd:01 77                         /lib/libc.so.6\n"
    "7f0000200000-7f0000300000 rw-p 00000000 00:00 0 \n"
    "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]\n"
    "not a mapping line\n";

TEST(ReadOnlyMappingsOfTest, KeepsOnlyTheFilesReadOnlyMappings) {
  std::vector<MappedRange> ranges = ReadOnlyMappingsOf(kMaps, "/usr/bin/baton");
  ASSERT_EQ(ranges.size(), 2U);
  EXPECT_EQ(ranges[0].begin, 0x55d0c2a00000U);
  EXPECT_EQ(ranges[0].end, 0x55d0c2b00000U);
  EXPECT_EQ(ranges[1].begin, 0x55d0c2b00000U);
  EXPECT_EQ(ranges[1].end, 0x55d0c3000000U);
}

TEST(ReadOnlyMappingsOfTest, PathsWithSpacesAndDeletedFilesMatchExactly) {
  constexpr absl::string_view kDeletedMaps =
      "1000-2000 r-xp 00000000 fd:01 5 /opt/my dir/baton (deleted)\n"
      "2000-3000 r-xp 00000000 fd:01 5 /opt/my dir/baton\n";
  std::vector<MappedRange> ranges = ReadOnlyMappingsOf(kDeletedMaps, "/opt/my dir/baton (deleted)");
  ASSERT_EQ(ranges.size(), 1U);
  EXPECT_EQ(ranges[0].begin, 0x1000U);
  EXPECT_TRUE(ReadOnlyMappingsOf(kDeletedMaps, "/opt/my").empty());
}

int64_t RssFileKib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t value = -1;
  while (status >> key) {
    if (key == "RssFile:") {
      status >> value;
      break;
    }
  }
  return value;
}

TEST(ReleaseStartupPagesTest, ResidentCodeShrinksAndStillRuns) {
  const int64_t before = RssFileKib();
  absl::StatusOr<size_t> advised = ReleaseStartupPages();
  ASSERT_TRUE(advised.ok()) << advised.status();
  EXPECT_GT(*advised, 0U);
  const int64_t after = RssFileKib();
  EXPECT_LT(after, before) << "RssFile " << before << " kB before, " << after << " kB after";
  // The code paged out comes back when it runs again.
  EXPECT_EQ(ReadOnlyMappingsOf(kMaps, "/usr/bin/baton").size(), 2U);
}

}  // namespace
}  // namespace baton

#include "sidecar/api/process_metrics.h"

#include <unistd.h>

#include <ctime>

#include "gtest/gtest.h"

namespace baton {
namespace {

// proc(5)'s /proc/self/stat layout; the command name holds a space and a ')'.
constexpr char kSelfStat[] =
    "4242 (ba ton) x) S 1 4242 4242 0 -1 4194560 1500 0 0 0 250 50 0 0 20 0 9 0 "
    "360000 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";
constexpr char kSystemStat[] = "cpu  1 2 3 4\nintr 5\nbtime 1760000000\nprocesses 9\n";

TEST(ProcessMetricsTest, ParsesCpuMemoryAndStartTime) {
  absl::StatusOr<ProcessStats> stats = ParseProcStat(kSelfStat, kSystemStat, 100, 4096);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 3.0);  // (250 + 50) ticks at 100/s
  EXPECT_EQ(stats->virtual_bytes, 104857600u);
  EXPECT_EQ(stats->resident_bytes, 2560u * 4096);
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1760000000.0 + 3600);
}

TEST(ProcessMetricsTest, MalformedTextIsAnError) {
  EXPECT_FALSE(ParseProcStat("4242 (baton) S 1 2", kSystemStat, 100, 4096).ok());
  EXPECT_FALSE(ParseProcStat("no name at all", kSystemStat, 100, 4096).ok());
  EXPECT_FALSE(ParseProcStat(kSelfStat, "cpu 1 2 3\n", 100, 4096).ok());
}

TEST(ProcessMetricsTest, ReadsThisProcess) {
  absl::StatusOr<ProcessStats> stats = ReadProcessStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->resident_bytes, 0u);
  EXPECT_GE(stats->virtual_bytes, stats->resident_bytes);
  EXPECT_GE(stats->open_fds, 3);  // stdin, stdout, stderr at least
  EXPECT_GT(stats->max_fds, 0);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(stats->start_time_seconds, now + 1);
  EXPECT_GT(stats->start_time_seconds, now - 3600);
}

}  // namespace
}  // namespace baton

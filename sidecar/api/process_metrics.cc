#include "sidecar/api/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace baton {
namespace {

// Fields of /proc/self/stat after "pid (comm) ", counted from `state` (the
// third field, proc(5)'s numbering) as index 0.
constexpr size_t kUtime = 14 - 3;
constexpr size_t kStime = 15 - 3;
constexpr size_t kStartTime = 22 - 3;
constexpr size_t kVsize = 23 - 3;
constexpr size_t kRss = 24 - 3;

absl::StatusOr<std::string> ReadProcFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return absl::UnavailableError(absl::StrCat("cannot read ", path));
  }
  return text.str();
}

// Entries of /proc/self/fd, the directory's own descriptor included (as
// Prometheus' Go client counts them).
absl::StatusOr<int64_t> CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return absl::UnavailableError("cannot read /proc/self/fd");
  int64_t count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

}  // namespace

absl::StatusOr<ProcessStats> ParseProcStat(std::string_view self_stat, std::string_view system_stat,
                                           int64_t ticks_per_second, int64_t page_size) {
  // The command name may hold spaces and parentheses; it ends at the last ')'.
  const size_t comm_end = self_stat.rfind(')');
  if (comm_end == std::string_view::npos) {
    return absl::InvalidArgumentError("/proc/self/stat: no command name");
  }
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(self_stat.data() + comm_end + 1, self_stat.size() - comm_end - 1), ' ',
      absl::SkipWhitespace());
  uint64_t utime = 0, stime = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
  if (fields.size() <= kRss || !absl::SimpleAtoi(fields[kUtime], &utime) ||
      !absl::SimpleAtoi(fields[kStime], &stime) ||
      !absl::SimpleAtoi(fields[kStartTime], &start_ticks) ||
      !absl::SimpleAtoi(fields[kVsize], &vsize) || !absl::SimpleAtoi(fields[kRss], &rss_pages)) {
    return absl::InvalidArgumentError("/proc/self/stat: malformed");
  }
  std::optional<uint64_t> boot_time;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(system_stat.data(), system_stat.size()), '\n')) {
    uint64_t value = 0;
    if (absl::ConsumePrefix(&line, "btime ") && absl::SimpleAtoi(line, &value)) boot_time = value;
  }
  if (!boot_time.has_value() || ticks_per_second <= 0) {
    return absl::InvalidArgumentError("/proc/stat: no btime");
  }
  ProcessStats stats;
  const auto ticks = static_cast<double>(ticks_per_second);
  stats.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  stats.start_time_seconds =
      static_cast<double>(*boot_time) + static_cast<double>(start_ticks) / ticks;
  stats.virtual_bytes = vsize;
  stats.resident_bytes = rss_pages * static_cast<uint64_t>(page_size);
  return stats;
}

absl::StatusOr<ProcessStats> ReadProcessStats() {
  absl::StatusOr<std::string> self_stat = ReadProcFile("/proc/self/stat");
  if (!self_stat.ok()) return self_stat.status();
  absl::StatusOr<std::string> system_stat = ReadProcFile("/proc/stat");
  if (!system_stat.ok()) return system_stat.status();
  absl::StatusOr<ProcessStats> stats =
      ParseProcStat(*self_stat, *system_stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
  if (!stats.ok()) return stats.status();
  absl::StatusOr<int64_t> open_fds = CountOpenFds();
  if (!open_fds.ok()) return open_fds.status();
  stats->open_fds = *open_fds;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) stats->max_fds = static_cast<int64_t>(limit.rlim_cur);
  return stats;
}

}  // namespace baton

// ProcessStats: the standard Prometheus process metrics (the names every
// exporter uses: process_resident_memory_bytes, process_cpu_seconds_total,
// ...), read from /proc at scrape time. Linux only, like baton.
#ifndef BATON_SIDECAR_API_PROCESS_METRICS_H_
#define BATON_SIDECAR_API_PROCESS_METRICS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace baton {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  // Seconds since the Unix epoch.
  double start_time_seconds = 0;
  int64_t open_fds = 0;
  int64_t max_fds = 0;  // the soft RLIMIT_NOFILE
};

// The fields of `self_stat` (the text of /proc/self/stat) and the boot time
// in `system_stat` (/proc/stat's `btime` line), with the kernel's clock ticks
// per second and page size. InvalidArgument if either text is malformed.
// Leaves open_fds and max_fds alone.
absl::StatusOr<ProcessStats> ParseProcStat(std::string_view self_stat, std::string_view system_stat,
                                           int64_t ticks_per_second, int64_t page_size);

// This process's stats, from /proc/self/stat, /proc/stat, /proc/self/fd and
// getrlimit. Unavailable if /proc cannot be read. Thread-safe; a few small
// file reads, no allocation beyond the texts.
absl::StatusOr<ProcessStats> ReadProcessStats();

}  // namespace baton

#endif  // BATON_SIDECAR_API_PROCESS_METRICS_H_

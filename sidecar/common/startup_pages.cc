#include "sidecar/common/startup_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sidecar/common/errno_text.h"

namespace baton {

std::vector<MappedRange> ReadOnlyMappingsOf(absl::string_view maps, absl::string_view path) {
  std::vector<MappedRange> ranges;
  // "55d0c2a00000-55d0c2b00000 r-xp 00000000 fd:01 1234   /usr/bin/baton"
  for (absl::string_view line : absl::StrSplit(maps, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits(' ', 5), absl::SkipEmpty());
    if (fields.size() < 6 || fields[1].size() != 4 || fields[1][1] == 'w') continue;
    if (absl::StripLeadingAsciiWhitespace(fields[5]) != path) continue;
    std::pair<absl::string_view, absl::string_view> bounds = absl::StrSplit(fields[0], '-');
    MappedRange range;
    if (!absl::SimpleHexAtoi(bounds.first, &range.begin) ||
        !absl::SimpleHexAtoi(bounds.second, &range.end) || range.end <= range.begin) {
      continue;
    }
    ranges.push_back(range);
  }
  return ranges;
}

absl::StatusOr<size_t> ReleaseStartupPages() {
  std::array<char, 4096> exe{};
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  if (n < 0) return absl::InternalError(absl::StrCat("/proc/self/exe: ", ErrnoText(errno)));
  std::ifstream in("/proc/self/maps");
  if (!in) return absl::InternalError("cannot read /proc/self/maps");
  std::stringstream maps;
  maps << in.rdbuf();

  size_t advised = 0;
  for (const MappedRange& range :
       ReadOnlyMappingsOf(maps.str(), absl::string_view(exe.data(), static_cast<size_t>(n)))) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the address comes from the kernel's map
    void* begin = reinterpret_cast<void*>(range.begin);
    const size_t length = range.end - range.begin;
    if (madvise(begin, length, MADV_RANDOM) != 0 || madvise(begin, length, MADV_PAGEOUT) != 0) {
      return absl::InternalError(absl::StrCat("madvise: ", ErrnoText(errno)));
    }
    advised += length;
  }
  // What start-up read ahead but never mapped would otherwise come back
  // with the first fault near it; drop it from the page cache too (pages
  // some process still maps stay).
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("/proc/self/exe: ", ErrnoText(errno)));
  const int err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (err != 0) return absl::InternalError(absl::StrCat("posix_fadvise: ", ErrnoText(err)));
  return advised;
}

}  // namespace baton

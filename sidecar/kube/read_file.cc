#include "sidecar/kube/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sidecar/common/errno_text.h"

namespace baton::kube {

absl::StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string message = absl::StrCat("cannot open ", path, ": ", ErrnoText(err));
    return err == ENOENT ? absl::NotFoundError(message) : absl::FailedPreconditionError(message);
  }
  std::string out;
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read ", path, ": ", ErrnoText(err)));
    }
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace baton::kube

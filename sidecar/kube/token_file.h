// TokenFile: a bearer token read from a file and re-read when the file
// changes, so a client survives ServiceAccount token rotation (the kubelet
// replaces a projected token about every hour; a client that read it once
// starts failing with 401).
//
// Current() costs one stat(2) per call; the file is re-read when its identity
// (device, inode, size, mtime) changes, and at least every kMaxTokenAge in
// case a rewrite kept all of them. If a re-read fails, the last good token is
// kept and the failure logged.
//
// Thread-safe. Current() blocks on file I/O only.
#ifndef BATON_SIDECAR_KUBE_TOKEN_FILE_H_
#define BATON_SIDECAR_KUBE_TOKEN_FILE_H_

#include <sys/stat.h>

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"

namespace baton::kube {

class TokenFile {
 public:
  // How long a token read from the file is used without re-reading it even
  // though the file looks unchanged.
  static constexpr absl::Duration kMaxTokenAge = absl::Minutes(1);

  // Ages the token on `clock`'s monotonic time.
  explicit TokenFile(std::string path, const Clock* clock = SystemClock())
      : path_(std::move(path)), clock_(clock) {}

  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  // The current token, surrounding whitespace removed. An error only if no
  // token has ever been read successfully (FailedPrecondition/NotFound,
  // naming the file, never the token).
  absl::StatusOr<std::string> Current() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& path() const { return path_; }

 private:
  struct FileIdentity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    timespec mtime{};
    bool operator==(const FileIdentity& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
             mtime.tv_nsec == o.mtime.tv_nsec;
    }
  };

  const std::string path_;
  const Clock* const clock_;
  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  FileIdentity identity_ ABSL_GUARDED_BY(mu_);
  std::optional<MonoTime> read_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_TOKEN_FILE_H_

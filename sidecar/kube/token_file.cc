#include "sidecar/kube/token_file.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sidecar/common/log.h"
#include "sidecar/kube/read_file.h"

namespace baton::kube {

absl::StatusOr<std::string> TokenFile::Current() {
  // stat() follows the kubelet's ..data symlink swap, so a rotated token
  // shows up as a new inode.
  struct stat st {};
  FileIdentity now_identity;
  if (::stat(path_.c_str(), &st) == 0) {
    now_identity = {st.st_dev, st.st_ino, st.st_size, st.st_mtim};
  }
  const MonoTime now = clock_->Monotonic();
  {
    absl::MutexLock lock(&mu_);
    if (!token_.empty() && now_identity == identity_ && read_at_ &&
        now - *read_at_ < kMaxTokenAge) {
      return token_;
    }
  }

  absl::StatusOr<std::string> contents = ReadFile(path_);
  std::string fresh =
      contents.ok() ? std::string(absl::StripAsciiWhitespace(*contents)) : std::string();
  absl::MutexLock lock(&mu_);
  if (fresh.empty()) {
    const std::string why =
        contents.ok() ? "file is empty" : std::string(contents.status().message());
    if (token_.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("no bearer token in ", path_, ": ", why));
    }
    spdlog::warn("event=token_reread_failed file={} error={} next=keep_previous_token",
                 LogValue(path_), LogValue(why));
    // Try again when the file changes or the token ages out, not on every request.
    identity_ = now_identity;
    read_at_ = now;
    return token_;
  }
  if (!token_.empty() && fresh != token_) {
    spdlog::info("event=token_rotated file={}", LogValue(path_));
  }
  token_ = std::move(fresh);
  identity_ = now_identity;
  read_at_ = now;
  return token_;
}

}  // namespace baton::kube

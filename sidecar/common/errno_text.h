// ErrnoText: the message of an errno value, safe to call from any thread.
#ifndef BATON_SIDECAR_COMMON_ERRNO_TEXT_H_
#define BATON_SIDECAR_COMMON_ERRNO_TEXT_H_

#include <string>

namespace baton {

// The text of errno value `err` ("No such file or directory"). Unlike
// std::strerror, which may share one buffer between threads, thread-safe.
std::string ErrnoText(int err);

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_ERRNO_TEXT_H_

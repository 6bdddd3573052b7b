#include "sidecar/common/errno_text.h"

#include <cstring>

namespace baton {

std::string ErrnoText(int err) {
  char buffer[256];
  // The GNU strerror_r, which returns the text (in `buffer` or a static one).
  return strerror_r(err, buffer, sizeof buffer);
}

}  // namespace baton

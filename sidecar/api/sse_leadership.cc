#include "sidecar/api/sse_leadership.h"

#include "absl/strings/str_cat.h"
#include "sidecar/api/leadership_proto.h"

namespace baton {

std::string SseLeadershipEvent(const Leadership& leadership, MonoTime now, WatchEvent) {
  return absl::StrCat("event: leadership\ndata: ", LeadershipJson(leadership, now), "\n\n");
}

}  // namespace baton

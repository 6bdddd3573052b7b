#include "sidecar/api/sse_leadership.h"

#include "absl/strings/str_cat.h"
#include "sidecar/api/leadership_proto.h"

namespace baton {

std::string SseLeadershipEvent(const LeaderAnswer& answer, WatchReason) {
  return absl::StrCat("event: leadership\ndata: ", LeadershipJson(answer, answer.at()), "\n\n");
}

}  // namespace baton

// The Server-Sent Events of GET /leader/watch (text/event-stream, the
// WHATWG HTML "server-sent events" format), as HttpServer writes them:
//
//   event: leadership
//   data: {"isLeader":true,"identity":"web-0_3f9a1c",...}
//   <blank line>
//
// one such event at once and one per change (what is news is decided by
// LeadershipWatchSource, as for gRPC's WatchLeadership), its data exactly the
// JSON body GET /leader answers with (one line), and between them, after
// every heartbeat interval without a write, the comment line
//
//   : heartbeat
//   <blank line>
//
// which EventSource clients ignore and which keeps idle proxies and the
// client's stall detection happy. A stream that asked for ?heartbeat= gets
// the state itself again instead (WatchReason::kHeartbeat, formatted like any
// event): a fresh promise while leading. No `id:` field: every event is the whole
// state, so a reconnecting client needs no Last-Event-ID (it is ignored).
#ifndef BATON_SIDECAR_API_SSE_LEADERSHIP_H_
#define BATON_SIDECAR_API_SSE_LEADERSHIP_H_

#include <string>
#include <string_view>

#include "sidecar/api/leadership_watch_source.h"
#include "sidecar/api/watch_streams.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/leadership.h"

namespace baton {

// What GET /leader/watch streams watch; a stream's param is its Reader.
using SseLeadershipSource = LeadershipWatchSource<std::string>;
using SseLeadershipStreams = WatchStreams<SseLeadershipSource>;

// The event telling `answer` (LeadershipWatchSource's
// format for GET /leader/watch). Every event has the same name, whatever
// `reason` it is sent for: the first one of a stream is the initial state.
std::string SseLeadershipEvent(const LeaderAnswer& answer, WatchReason reason);

// The heartbeat comment.
inline constexpr std::string_view kSseHeartbeat = ": heartbeat\n\n";

}  // namespace baton

#endif  // BATON_SIDECAR_API_SSE_LEADERSHIP_H_

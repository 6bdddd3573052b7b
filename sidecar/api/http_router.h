// HttpRouter: turns one parsed HTTP request into its response. The routing
// and every answer of baton's HTTP API live here, apart from the sockets, so
// they can be tested without a network.
//
// Routes (GET routes also answer HEAD; a known path with another method gets
// 405 with an Allow header; an unknown path 404; query parameters other than
// those named below are ignored):
//
//   GET  /               {"name":"<holder>"}: the retired leader-elector
//                        sidecar's answer, for drop-in migration (exactly "/";
//                        leader-elector answered every path). Names this
//                        sidecar only while it leads ("" while it holds the
//                        Lease without leading, e.g. stepping down), as a
//                        promise like GET /leader's.
//   GET  /leader         200, proto3 JSON of baton.v1.Leadership. With
//                        ?client_id=ID a leader answer is a promise to ID
//                        (LocalApi::Get); 400 with a short
//                        reason if ID is not 1-64 chars of [A-Za-z0-9._-].
//                        ?max_valid_for=DUR (e.g. 2s) bounds the promise
//                        (Reader::max_valid_for); without it an unnamed
//                        reader gets at most --max-unnamed-valid-for; 400
//                        if malformed or under 1ms.
//   GET  /leader/watch   an event stream (text/event-stream; sse_leadership.h):
//                        the Leadership JSON at once, then at every change.
//                        ?client_id=ID as for GET /leader, ?max_valid_for=DUR
//                        too, but only the stream's own bound applies;
//                        ?heartbeat=DUR
//                        (e.g. 5s) asks for the state again after that long
//                        without an event (a state heartbeat); 400
//                        for a malformed one. Handle only answers the
//                        stream's head; HttpServer runs the stream.
//   GET  /readyz/leader  200 while this pod leads, 503 otherwise.
//   GET  /healthz        liveness: 200 "ok" or 503 with a one-line reason.
//   GET  /readyz         readiness: 200 "ok" or 503 with a one-line reason.
//   GET  /metrics        Prometheus text format.
//   POST /resign         200, proto3 JSON of baton.v1.ResignResponse; 501 when
//                        the daemon offers no resign hook. The body is ignored.
//   POST /leader/ack     ?client_id=ID&fencing_token=N (both required; 400
//                        with a short reason otherwise), and
//                        &valid_until_boottime=D (optional: the
//                        validUntilBoottime of the last answer acted on, as
//                        GET /leader prints it, e.g. 12345.678901234s; 400
//                        if malformed or negative): ID has stopped acting on
//                        term N up to deadline D (Acknowledgement; without
//                        D, on all of it). 200 {"acknowledged":bool}.
//
// HttpRoutes::kProbesAndMetrics serves only /metrics, /healthz, /readyz and
// /readyz/leader: the read-only endpoints the kubelet and Prometheus need on
// the Pod IP (a kubelet probe cannot reach 127.0.0.1), without exposing
// /leader, /leader/watch, /, /resign or /leader/ack beyond the Pod.
//
// Every answer is computed from the snapshot and the clock at the moment of
// the request and carries Cache-Control: no-store. The one exception is the
// body of GET /leader, whose proto3 JSON printing costs tens of microseconds:
// it is reused for requests within `leader_cache_window` of each other (and
// of the same snapshot version and deadline, see Reader), and is evaluated at the END of that
// window, so a reused answer understates validFor by less than the window and never says
// isLeader=true later than it is true.
#ifndef BATON_SIDECAR_API_HTTP_ROUTER_H_
#define BATON_SIDECAR_API_HTTP_ROUTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/status.hpp"
#include "boost/beast/http/string_body.hpp"
#include "sidecar/api/api_context.h"
#include "sidecar/api/local_api.h"

namespace baton {

enum class HttpRoutes {
  kApi,               // everything above; for the loopback API address
  kProbesAndMetrics,  // /metrics and the probe endpoints only
};

// Thread-safe: Handle may run on many threads at once. Does no I/O; the only
// calls out are the ApiHooks, which promise to be quick.
class HttpRouter {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  // What GET /leader/watch asks to watch.
  struct EventStream {
    Reader reader;                            // ?client_id=
    std::optional<absl::Duration> heartbeat;  // ?heartbeat=, positive
  };

  // The answer to one request: a complete response, or the head of an event
  // stream and what the stream watches.
  struct Reply {
    // Ready to send: status, headers, body and Content-Length set; keep-alive
    // as the request asks; body left empty (with the full Content-Length)
    // for HEAD. For a stream: status 200, Content-Type text/event-stream,
    // chunked for HTTP/1.1, no Content-Length, Connection: close. HEAD of a
    // stream: the same without Transfer-Encoding (there is no body to frame),
    // and without Content-Length, which would have to be the GET body's.
    Response response;
    // Set for GET /leader/watch (not HEAD): the caller streams the events
    // after the head. Not recorded in the metrics: whether the stream is
    // admitted is for the caller to say.
    std::optional<EventStream> stream;
  };

  // `context` must outlive the router. `leader_cache_window` zero: GET /leader
  // renders every answer afresh.
  HttpRouter(HttpRoutes routes, absl::Duration leader_cache_window, const ApiContext* context);

  // The answer to `request`. Records the request in the metrics unless it
  // opens a stream.
  Reply Handle(const Request& request) const;

  // A short plain-text error response ("<reason>\n") for a request that could
  // not be read (400, 408, 413, 431, ...). Always closes the connection.
  static Response Error(boost::beast::http::status status, absl::string_view reason,
                        unsigned version);

 private:
  struct Route;

  Response GetLeaderElectorName(const Request& request) const;
  Response GetLeader(const Request& request) const;
  Reply GetLeaderWatch(const Request& request) const;
  Response GetReadyzLeader(const Request& request) const;
  Response GetHealthz(const Request& request) const;
  Response GetReadyz(const Request& request) const;
  Response GetMetrics(const Request& request) const;
  Response PostResign(const Request& request) const;
  Response PostLeaderAck(const Request& request) const;

  // The JSON body of GET /leader telling `answer`.
  std::string LeaderJson(const LeaderAnswer& answer) const;

  const HttpRoutes routes_;
  const absl::Duration leader_cache_window_;
  const ApiContext* const context_;
  const LocalApi api_;

  struct CachedLeaderJson {
    uint64_t version = 0;
    MonoTime deadline;  // the leader_until it tells
    MonoTime from;      // served for requests in [from, until)
    MonoTime until;     // and evaluated at `until`
    std::string body;
  };
  mutable absl::Mutex cache_mu_;
  mutable CachedLeaderJson cache_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_HTTP_ROUTER_H_

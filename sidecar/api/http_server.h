// HttpServer: baton's HTTP/1.1 server (Boost.Beast, asynchronous), answering
// the routes of HttpRouter from the published leadership snapshot.
//
// One instance serves one address. The daemon runs one with HttpRoutes::kApi
// on loopback and, optionally, a second with HttpRoutes::kProbesAndMetrics on
// the Pod IP for the kubelet and Prometheus.
//
// Limits, all from HttpServerOptions:
//  * every read and write has a deadline (tcp_stream::expires_after before
//    each operation): idle_timeout while a keep-alive connection waits for
//    the first byte of its next request, request_timeout from that byte until
//    the request is complete (a client that never finishes is cut off),
//    write_timeout for each answer;
//  * header and body sizes: beyond them the client gets 431 or 413 and the
//    connection is closed; a malformed request gets 400; a timed-out one is
//    closed;
//  * connections: at max_connections, a new connection evicts the one that
//    has gone longest without completing a request — whether it is idle
//    between requests, stuck part-way through one, or not reading its
//    answer — measured from its accept or from the end of its previous
//    answer. No set of clients can hold every slot: a well-behaved client,
//    which finishes a request within moments of connecting, is evicted only
//    if max_connections other connections arrive in those moments.
// Each connection runs on its own strand; requests on one connection are
// answered in order (pipelining works). Errors are error_code values; no
// exception escapes a handler.
//
// GET /leader/watch (HttpRoutes::kApi only) turns its connection into an
// event stream (sse_leadership.h) for the rest of the connection's life:
//  * the streams are SseLeadershipStreams (watch_streams.h), kept current by
//    the server's own WatchRefresher, as the gRPC watch streams are by
//    GrpcServer's: the same decision of what is news, the same promise
//    recording (every leader event is a LeaderAnswer obtained for the
//    stream's client_id when it is built), and a slow reader gets the newest
//    state, never a backlog;
//  * beyond max_watchers open streams a new one gets 503 with the reason;
//  * a stream is never evicted: once admitted it leaves max_connections (so
//    streams cannot crowd out requests) and counts against max_watchers
//    instead; at most max_connections + max_watchers sockets are open;
//  * every write has write_timeout; after watch_heartbeat without a write
//    the stream gets a heartbeat comment; while streaming the server reads
//    (and discards) from the client only to see it go away;
//  * Shutdown sends every stream what it is still owed, then ends it with
//    the last chunk and closes the connection.
#ifndef BATON_SIDECAR_API_HTTP_SERVER_H_
#define BATON_SIDECAR_API_HTTP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "sidecar/api/api_context.h"
#include "sidecar/api/http_router.h"
#include "sidecar/api/sse_leadership.h"
#include "sidecar/api/watch_refresher.h"

namespace baton {

struct HttpServerOptions {
  // "host:port" (IPv6 as "[::1]:port"); port 0 picks a free port (see port()).
  std::string address = "127.0.0.1:4040";
  HttpRoutes routes = HttpRoutes::kApi;
  // Threads running the server's event loop. One serves tens of thousands of
  // requests per second; the sidecar shares its CPU with the application.
  int threads = 1;
  // Open connections beyond which the one that has waited longest for its
  // client is evicted.
  int max_connections = 512;
  // Kernel accept queue length (capped by net.core.somaxconn).
  int listen_backlog = 1024;
  // Request line plus headers; beyond it: 431.
  size_t max_header_bytes = size_t{8} * 1024;
  // Request body (only POST /resign takes one, and ignores it); beyond it: 413.
  size_t max_body_bytes = size_t{4} * 1024;
  // How long a keep-alive connection may wait for its next request.
  absl::Duration idle_timeout = absl::Seconds(60);
  // From the first byte of a request until it is completely read.
  absl::Duration request_timeout = absl::Seconds(5);
  // For writing one answer.
  absl::Duration write_timeout = absl::Seconds(5);
  // After an error answer (400/413/431), how long to keep reading and
  // discarding what the client still sends before closing, so it reads the
  // answer rather than a connection reset.
  absl::Duration close_linger = absl::Seconds(1);
  // GET /leader reuses its JSON body for requests this close together (see
  // HttpRouter); answers understate validFor by less than this. Zero: never.
  absl::Duration leader_cache_window = absl::Milliseconds(1);
  // Pause before accepting again after accept() fails (e.g. out of file
  // descriptors), instead of spinning.
  absl::Duration accept_backoff = absl::Milliseconds(100);
  // GET /leader/watch streams open at once (the gRPC watch's limit); beyond
  // it: 503.
  int max_watchers = 1024;
  // A stream with no event for this long gets a heartbeat comment (the
  // daemon's --sse-heartbeat). A client's ?heartbeat= may ask for less.
  absl::Duration watch_heartbeat = absl::Seconds(15);
  // Asked-for heartbeat intervals below this are raised to it (as gRPC's).
  absl::Duration min_watch_heartbeat = absl::Milliseconds(100);
  // The streams' refresher looks at the state at least this often.
  absl::Duration watch_refresh_interval = absl::Seconds(1);
};

// Thread-safe: Start, port and Shutdown may be called from any thread, but
// Start at most once. The destructor shuts down if Shutdown was not called.
class HttpServer {
 public:
  // `context` must outlive the server.
  HttpServer(HttpServerOptions options, const ApiContext* context);
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens, then serves on options.threads threads. InvalidArgument
  // for a malformed address; Unavailable if it cannot be bound.
  absl::Status Start();

  // The bound port; 0 before Start succeeds.
  int port() const;

  // Open GET /leader/watch streams.
  int watchers() const;

  // Stops accepting, closes idle connections, sends every event stream what
  // it is owed and ends it, lets answers being written finish (with
  // Connection: close) until `deadline` on the context's wait_clock, then
  // closes whatever is left and joins the threads. Idempotent. Blocks until
  // done.
  void Shutdown(MonoTime deadline);

 private:
  class Session;      // one connection's request loop
  class WatchStream;  // the event stream a connection becomes on GET /leader/watch
  // Each connection's socket runs on its own strand; the concrete executor
  // type (not any_io_executor) keeps type erasure off the per-request path.
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;

  void Accept();
  void OnAccept(boost::system::error_code ec, Socket socket);
  // Registers a new connection, evicting the longest-waiting one at the limit.
  void Admit(Socket socket);
  void Forget(const Session* session);
  // Takes `session` out of (or back into) the connections that count against
  // max_connections and may be evicted. False if it was evicted already.
  bool SetStreaming(const Session* session, bool streaming);
  // A number above every one handed out before: when a connection began to
  // wait, in the order the waits began, for picking the longest wait.
  uint64_t NextWaitTicket() { return wait_tickets_.fetch_add(1, std::memory_order_relaxed); }
  // The heartbeat interval of a stream that asked for `asked`.
  absl::Duration WatchHeartbeat(std::optional<absl::Duration> asked) const;

  struct Connection {
    std::weak_ptr<Session> session;
    bool streaming = false;  // an event stream: not evicted, not counted
  };

  const HttpServerOptions options_;
  const ApiContext* const context_;
  const HttpRouter router_;
  // GET /leader/watch; only with HttpRoutes::kApi. Destroyed after the
  // sessions (declared before ioc_), which unregister from it.
  std::unique_ptr<SseLeadershipSource> watch_source_;
  std::unique_ptr<SseLeadershipStreams> watches_;
  std::unique_ptr<WatchRefresher> refresher_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<const Session*, Connection> sessions_ ABSL_GUARDED_BY(mu_);
  // Entries of sessions_ that are streaming.
  size_t streaming_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> wait_tickets_{0};
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int port_ ABSL_GUARDED_BY(mu_) = 0;

  // Destroyed before the members above: handlers still queued at that point
  // own Sessions, whose destructors call Forget().
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_backoff_timer_;
  std::vector<std::thread> threads_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_HTTP_SERVER_H_

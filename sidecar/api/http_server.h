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
#ifndef BATON_SIDECAR_API_HTTP_SERVER_H_
#define BATON_SIDECAR_API_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
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

  // Stops accepting, closes idle connections, lets answers being written
  // finish (with Connection: close) until `deadline`, then closes whatever is
  // left and joins the threads. Idempotent. Blocks until done.
  void Shutdown(absl::Time deadline);

 private:
  class Session;
  // Each connection's socket runs on its own strand; the concrete executor
  // type (not any_io_executor) keeps type erasure off the per-request path.
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;

  void Accept();
  void OnAccept(boost::system::error_code ec, Socket socket);
  // Registers a new connection, evicting the longest-waiting one at the limit.
  void Admit(Socket socket);
  void Forget(const Session* session);

  const HttpServerOptions options_;
  const ApiContext* const context_;
  const HttpRouter router_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<const Session*, std::weak_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
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

// HttpsClient: one keep-alive HTTP/1.1 connection over verified TLS to one
// server, driven synchronously with a deadline on every request.
//
// * TLS 1.2+, the server certificate verified against the given CA bundle
//   only (never the system roots), its name or IP checked, SNI sent for DNS
//   names. An optional client certificate is presented.
// * The connection is reused across requests while the server keeps it
//   alive. Any error, timeout or cancellation closes it; the next request
//   dials a fresh one. A request that fails on a reused connection before any
//   response byte arrives (the server had closed the idle connection) is
//   retried once on a new connection within the same deadline.
// * Response headers and bodies are bounded; exceeding a limit is an error.
// * Errors: dial/TLS/connection failures and malformed HTTP → Unavailable,
//   deadline → DeadlineExceeded, oversized body → Internal, after Cancel() →
//   Cancelled. Messages name the server and the step, never header values.
//
// Thread safety: one request at a time (callers serialize); Cancel() may be
// called from any thread. The calling thread runs the I/O; no threads of its
// own.
#ifndef BATON_SIDECAR_KUBE_HTTPS_CLIENT_H_
#define BATON_SIDECAR_KUBE_HTTPS_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/message.hpp"
#include "boost/beast/http/string_body.hpp"
#include "sidecar/common/clock.h"
#include "sidecar/kube/tls_endpoint.h"

namespace baton::kube {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// When an operation must have finished, on the monotonic time of the
// client's clock (HttpsClientOptions::clock).
using Deadline = MonoTime;

struct HttpsClientOptions {
  // The server, its CA and the client certificate; host and CA required.
  TlsEndpoint endpoint;

  size_t max_header_bytes = 64 << 10;
  size_t max_body_bytes = 4 << 20;
  // TCP keepalive idle time on the connection, so a watch on a peer that
  // vanished fails within about twice this instead of hanging.
  absl::Duration tcp_keepalive = absl::Seconds(30);
  // The clock Deadlines are on.
  const Clock* clock = SystemClock();
};

class HttpsClient {
 public:
  // Validates the options and loads the CA and client certificate.
  // InvalidArgument if the CA is missing or unparsable or the client
  // certificate and key do not load or match. Does not dial.
  static absl::StatusOr<std::unique_ptr<HttpsClient>> Create(HttpsClientOptions options);

  HttpsClient(const HttpsClient&) = delete;
  HttpsClient& operator=(const HttpsClient&) = delete;
  ~HttpsClient();

  // Sends `request` (Host is set here) and reads the whole response before
  // `deadline`. Any HTTP status is a successful round trip.
  absl::StatusOr<HttpResponse> RoundTrip(HttpRequest& request, Deadline deadline);

  // Sends `request` and reads the response head before `head_deadline`. For
  // a 200, calls `on_head` once, then passes body bytes to `on_body` as they
  // arrive until the body ends (returns the head, empty body), `on_body`
  // returns an error (returned as is), `end_deadline` passes
  // (DeadlineExceeded) or Cancel(). Any other status is read whole (bounded,
  // before `head_deadline`) and returned without calling either callback.
  // The body of a 200 is not size-limited here; `on_body` bounds what it
  // buffers.
  absl::StatusOr<HttpResponse> Stream(HttpRequest& request, Deadline head_deadline,
                                      Deadline end_deadline,
                                      absl::FunctionRef<void(const HttpResponse&)> on_head,
                                      absl::FunctionRef<absl::Status(absl::string_view)> on_body);

  // Aborts the request in progress, if any, and makes every later call fail
  // with Cancelled. Thread-safe, non-blocking; the aborted call returns
  // promptly.
  void Cancel();

  // How many connections have been dialled (TCP + TLS attempted).
  int dial_count() const { return dial_count_.load(); }

 private:
  struct IoResult {
    boost::system::error_code ec;
    bool timed_out = false;
  };
  using Done = std::function<void(boost::system::error_code)>;

  HttpsClient(HttpsClientOptions options, uint16_t port, boost::asio::ssl::context ssl_ctx);

  // Starts an operation with `start(done)` and runs the I/O until it calls
  // `done` or `deadline` passes, in which case the connection is aborted.
  IoResult Await(Deadline deadline, absl::FunctionRef<void(Done)> start);
  // Dials if there is no open connection, then writes `request`. Sets
  // `reused` to whether an existing connection was used.
  absl::Status Send(HttpRequest& request, Deadline deadline, bool& reused);
  absl::Status Dial(Deadline deadline);
  // Closes the connection; runs only on the calling thread.
  void Close();
  // Closes the socket under pending operations so they complete.
  void AbortIo();
  // The status for a failed step.
  absl::Status IoError(absl::string_view step, const IoResult& r) const;
  // Whether a step that failed with `r` on a connection that was `reused`
  // failed because the server had closed it while idle, before reading the
  // request: then the request may go again on a new connection.
  bool ServerClosedIdle(bool reused, const IoResult& r) const;
  const std::string& ServerName() const;

  const HttpsClientOptions options_;
  const uint16_t port_;
  const std::string host_header_;
  boost::asio::io_context ioc_;
  boost::asio::ssl::context ssl_ctx_;
  boost::asio::ip::tcp::resolver resolver_;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> stream_;
  boost::beast::flat_buffer buffer_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int> dial_count_{0};
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_HTTPS_CLIENT_H_

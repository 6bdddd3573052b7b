// TlsTestServer: a small scripted HTTPS server on 127.0.0.1 (port 0) for unit
// tests of the kube client — the faults a real API server will not produce on
// demand: hangs, resets mid-response, split or malformed bodies, oversized
// answers, dropped keep-alive connections.
//
// Each accepted connection gets a thread that completes the TLS handshake and
// then runs the test's handler, which reads requests and writes answers
// (whole or raw bytes) through a Connection. The destructor shuts every
// connection down and joins all threads, so a handler blocked in
// ReadRequest() returns.
//
// Thread-safe: handlers run concurrently, one thread per connection.
#ifndef BATON_SIDECAR_KUBE_TESTING_TLS_TEST_SERVER_H_
#define BATON_SIDECAR_KUBE_TESTING_TLS_TEST_SERVER_H_

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "boost/asio/ssl/stream.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "sidecar/kube/https_client.h"
#include "sidecar/kube/testing/test_pki.h"

namespace baton::kube::testing {

class TlsTestServer {
 public:
  // One accepted, TLS-established connection, as seen by a handler.
  class Connection {
   public:
    // The next request; nullopt once the client closed the connection or
    // on any error.
    std::optional<HttpRequest> ReadRequest();
    // Writes a whole response (Content-Length set from the body unless the
    // response is chunked). False on error.
    bool Write(HttpResponse response);
    // Writes bytes as they are. False on error.
    bool WriteRaw(absl::string_view bytes);
    // Closes with a TCP reset (no TLS close_notify).
    void Reset();
    // The SNI the client sent ("" for none), the CN of its certificate ("" if none).
    const std::string& sni() const { return sni_; }
    const std::string& client_cn() const { return client_cn_; }

   private:
    friend class TlsTestServer;
    Connection(TlsTestServer& server,
               boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream)
        : server_(server), stream_(stream) {}
    TlsTestServer& server_;
    boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream_;
    boost::beast::flat_buffer buffer_;
    std::string sni_;
    std::string client_cn_;
    bool reset_ = false;
  };
  using Handler = std::function<void(Connection&)>;

  struct Options {
    TestCert server_cert;
    // When set, client certificates signed by this CA are required.
    std::string client_ca_pem;
  };

  // Listens on 127.0.0.1:0 and starts accepting.
  TlsTestServer(Options options, Handler handler);
  ~TlsTestServer();
  TlsTestServer(const TlsTestServer&) = delete;
  TlsTestServer& operator=(const TlsTestServer&) = delete;

  std::string port() const { return std::to_string(port_); }
  // Connections accepted so far (TCP), and those whose TLS handshake failed.
  int connections() const { return connections_.load(); }
  int failed_handshakes() const { return failed_handshakes_.load(); }

  // A handler that answers every request on a connection with `respond`,
  // keeping the connection alive.
  static Handler Serve(std::function<HttpResponse(const HttpRequest&)> respond);

 private:
  void AcceptLoop();
  void Handle(boost::asio::ip::tcp::socket socket);
  // Stops tracking `fd` before it is closed, so it is never shut down after
  // the number is reused.
  void Forget(int fd) ABSL_LOCKS_EXCLUDED(mu_);

  const Handler handler_;
  boost::asio::io_context ioc_;
  boost::asio::ssl::context ssl_ctx_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> failed_handshakes_{0};
  std::thread accept_thread_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> open_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

// A JSON response with `status` and `body`.
HttpResponse JsonResponse(int status, std::string body);

}  // namespace baton::kube::testing

#endif  // BATON_SIDECAR_KUBE_TESTING_TLS_TEST_SERVER_H_

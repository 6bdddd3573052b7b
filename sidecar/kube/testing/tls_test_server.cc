#include "sidecar/kube/testing/tls_test_server.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "boost/asio/write.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"

namespace baton::kube::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;
using tcp = boost::asio::ip::tcp;

std::optional<HttpRequest> TlsTestServer::Connection::ReadRequest() {
  HttpRequest request;
  error_code ec;
  http::read(stream_, buffer_, request, ec);
  if (ec) return std::nullopt;
  return request;
}

bool TlsTestServer::Connection::Write(HttpResponse response) {
  if (!response.chunked()) response.prepare_payload();
  error_code ec;
  http::write(stream_, response, ec);
  return !ec;
}

bool TlsTestServer::Connection::WriteRaw(absl::string_view bytes) {
  error_code ec;
  asio::write(stream_, asio::buffer(bytes.data(), bytes.size()), ec);
  return !ec;
}

void TlsTestServer::Connection::Reset() {
  server_.Forget(stream_.next_layer().native_handle());
  reset_ = true;
  error_code ignored;
  stream_.next_layer().set_option(asio::socket_base::linger(true, 0), ignored);
  stream_.next_layer().close(ignored);
}

TlsTestServer::TlsTestServer(Options options, Handler handler)
    : handler_(std::move(handler)), ssl_ctx_(ssl::context::tls_server), acceptor_(ioc_) {
  error_code ec;
  ssl_ctx_.use_certificate_chain(asio::buffer(options.server_cert.cert_pem), ec);
  ssl_ctx_.use_private_key(asio::buffer(options.server_cert.key_pem), ssl::context::pem, ec);
  if (!options.client_ca_pem.empty()) {
    ssl_ctx_.add_certificate_authority(asio::buffer(options.client_ca_pem), ec);
    ssl_ctx_.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(endpoint.protocol(), ec);
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  acceptor_.bind(endpoint, ec);
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  port_ = acceptor_.local_endpoint(ec).port();
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TlsTestServer::~TlsTestServer() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // shutdown(2) wakes threads blocked in accept/read; close(2) would not.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  accept_thread_.join();
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void TlsTestServer::AcceptLoop() {
  while (true) {
    tcp::socket socket(ioc_);
    error_code ec;
    acceptor_.accept(socket, ec);
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    if (ec) continue;
    connections_.fetch_add(1);
    open_fds_.push_back(socket.native_handle());
    threads_.emplace_back([this, s = std::move(socket)]() mutable { Handle(std::move(s)); });
  }
}

void TlsTestServer::Handle(tcp::socket socket) {
  const int fd = socket.native_handle();
  ssl::stream<tcp::socket> stream(std::move(socket), ssl_ctx_);
  error_code ec;
  stream.handshake(ssl::stream_base::server, ec);
  if (ec) {
    failed_handshakes_.fetch_add(1);
    Forget(fd);
    return;
  }
  Connection conn(*this, stream);
  if (const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name)) {
    conn.sni_ = sni;
  }
  if (X509* peer = SSL_get1_peer_certificate(stream.native_handle())) {
    char cn[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    conn.client_cn_ = cn;
    X509_free(peer);
  }
  handler_(conn);
  // Forget the fd before `stream` closes it (Reset() already did).
  if (!conn.reset_) Forget(fd);
}

void TlsTestServer::Forget(int fd) {
  absl::MutexLock lock(&mu_);
  open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
}

TlsTestServer::Handler TlsTestServer::Serve(
    std::function<HttpResponse(const HttpRequest&)> respond) {
  return [respond = std::move(respond)](Connection& conn) {
    while (std::optional<HttpRequest> request = conn.ReadRequest()) {
      if (!conn.Write(respond(*request))) return;
    }
  };
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse response(static_cast<http::status>(status), 11);
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  return response;
}

}  // namespace baton::kube::testing

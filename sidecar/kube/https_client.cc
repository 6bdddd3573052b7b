#include "sidecar/kube/https_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl/error.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/http/buffer_body.hpp"
#include "boost/beast/http/error.hpp"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"

namespace baton::kube {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;
using tcp = boost::asio::ip::tcp;

constexpr size_t kStreamReadBytes = 16 << 10;

bool IsIpAddress(const std::string& s) {
  error_code ec;
  asio::ip::make_address(s, ec);
  return !ec;
}

// True for the ways a server's close of an idle keep-alive connection shows
// up on the next request sent over it.
bool IsDroppedConnection(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == http::error::end_of_stream ||
         ec == ssl::error::stream_truncated;
}

void SetSocketOptions(tcp::socket& socket, absl::Duration keepalive) {
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  socket.set_option(asio::socket_base::keep_alive(true), ignored);
  const int idle = static_cast<int>(absl::ToInt64Seconds(keepalive));
  const int interval = std::max(1, idle / 3);
  const int count = 3;
  const int fd = socket.native_handle();
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpsClient>> HttpsClient::Create(HttpsClientOptions options) {
  if (options.endpoint.host.empty()) {
    return absl::InvalidArgumentError("HTTPS client: no server host");
  }
  if (options.endpoint.ca_pem.empty()) {
    return absl::InvalidArgumentError(
        "HTTPS client: no CA certificate; the server is always verified");
  }
  int port = 0;
  if (!absl::SimpleAtoi(options.endpoint.port, &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("HTTPS client: bad port \"", options.endpoint.port, "\""));
  }
  if (options.endpoint.client_cert_pem.empty() != options.endpoint.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "HTTPS client: a client certificate needs its key and vice versa");
  }
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  ctx.set_verify_mode(ssl::verify_peer);
  error_code ec;
  ctx.add_certificate_authority(asio::buffer(options.endpoint.ca_pem), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("HTTPS client: cannot load the CA certificate: ", ec.message()));
  }
  if (!options.endpoint.client_cert_pem.empty()) {
    ctx.use_certificate_chain(asio::buffer(options.endpoint.client_cert_pem), ec);
    if (!ec) {
      ctx.use_private_key(asio::buffer(options.endpoint.client_key_pem), ssl::context::pem, ec);
    }
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("HTTPS client: cannot load the client certificate: ", ec.message()));
    }
    if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
      return absl::InvalidArgumentError(
          "HTTPS client: the client key does not match the client certificate");
    }
  }
  return std::unique_ptr<HttpsClient>(
      new HttpsClient(std::move(options), static_cast<uint16_t>(port), std::move(ctx)));
}

HttpsClient::HttpsClient(HttpsClientOptions options, uint16_t port, ssl::context ssl_ctx)
    : options_(std::move(options)),
      port_(port),
      host_header_(options_.endpoint.Authority()),
      ssl_ctx_(std::move(ssl_ctx)),
      resolver_(ioc_) {}

HttpsClient::~HttpsClient() { Close(); }

const std::string& HttpsClient::ServerName() const {
  return options_.endpoint.tls_server_name.empty() ? options_.endpoint.host
                                                   : options_.endpoint.tls_server_name;
}

void HttpsClient::Cancel() {
  cancelled_.store(true);
  // AbortIo must run on the thread driving ioc_; post hands it over.
  asio::post(ioc_, [this] { AbortIo(); });
}

void HttpsClient::AbortIo() {
  error_code ignored;
  if (stream_.has_value()) stream_->next_layer().close(ignored);
  resolver_.cancel();
}

void HttpsClient::Close() {
  AbortIo();
  stream_.reset();
  buffer_.clear();
}

HttpsClient::IoResult HttpsClient::Await(Deadline deadline, absl::FunctionRef<void(Done)> start) {
  // Shared so that a handler run after this returns (it never should) is harmless.
  struct State {
    bool done = false;
    bool timed_out = false;
    error_code ec;
  };
  auto state = std::make_shared<State>();
  // asio times the rest of the wait on its own clock. An infinite or huge
  // one would overflow that clock's representation.
  const absl::Duration left = std::clamp(deadline - options_.clock->Monotonic(),
                                         absl::ZeroDuration(), absl::Hours(24 * 365));
  asio::steady_timer timer(ioc_, absl::ToChronoNanoseconds(left));
  timer.async_wait([this, state](error_code ec) {
    if (!ec && !state->done) {
      state->timed_out = true;
      AbortIo();
    }
  });
  start([state](error_code ec) {
    state->ec = ec;
    state->done = true;
  });
  ioc_.restart();
  while (!state->done && ioc_.run_one() > 0) {
  }
  timer.cancel();
  ioc_.restart();
  ioc_.poll();
  IoResult result{state->ec, state->timed_out};
  if (!state->done) result.ec = asio::error::operation_aborted;
  return result;
}

bool HttpsClient::ServerClosedIdle(bool reused, const IoResult& r) const {
  return reused && !r.timed_out && IsDroppedConnection(r.ec) && !cancelled_.load();
}

absl::Status HttpsClient::IoError(absl::string_view step, const IoResult& r) const {
  const std::string where = absl::StrCat(step, " (", host_header_, ")");
  if (cancelled_.load()) return absl::CancelledError(absl::StrCat(where, ": cancelled"));
  if (r.timed_out) return absl::DeadlineExceededError(absl::StrCat(where, ": deadline exceeded"));
  if (r.ec == http::error::body_limit) {
    return absl::InternalError(
        absl::StrCat(where, ": response body larger than ", options_.max_body_bytes, " bytes"));
  }
  if (r.ec == http::error::header_limit) {
    return absl::InternalError(
        absl::StrCat(where, ": response header larger than ", options_.max_header_bytes, " bytes"));
  }
  if (r.ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
      r.ec != http::error::end_of_stream) {
    return absl::UnavailableError(absl::StrCat(where, ": malformed HTTP: ", r.ec.message()));
  }
  return absl::UnavailableError(absl::StrCat(where, ": ", r.ec.message()));
}

absl::Status HttpsClient::Dial(Deadline deadline) {
  Close();
  dial_count_.fetch_add(1);
  tcp::resolver::results_type endpoints;
  if (error_code ec; IsIpAddress(options_.endpoint.host)) {
    endpoints = tcp::resolver::results_type::create(
        tcp::endpoint(asio::ip::make_address(options_.endpoint.host, ec), port_),
        options_.endpoint.host, options_.endpoint.port);
  } else {
    IoResult r = Await(deadline, [&](const Done& done) {
      resolver_.async_resolve(options_.endpoint.host, options_.endpoint.port,
                              [&endpoints, done](error_code ec, tcp::resolver::results_type res) {
                                endpoints = std::move(res);
                                done(ec);
                              });
    });
    if (r.ec || r.timed_out) return IoError("resolve", r);
  }

  stream_.emplace(ioc_, ssl_ctx_);
  IoResult r = Await(deadline, [&](const Done& done) {
    asio::async_connect(stream_->next_layer(), endpoints,
                        [done](error_code ec, const tcp::endpoint&) { done(ec); });
  });
  if (r.ec || r.timed_out) {
    absl::Status s = IoError("connect", r);
    Close();
    return s;
  }
  SetSocketOptions(stream_->next_layer(), options_.tcp_keepalive);

  SSL* ssl = stream_->native_handle();
  const std::string& name = ServerName();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (IsIpAddress(name)) {
    // SNI carries DNS names only (RFC 6066); an IP is checked against the
    // certificate's IP SANs.
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name.c_str());
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  }
  r = Await(deadline, [&](const Done& done) {
    stream_->async_handshake(ssl::stream_base::client, [done](error_code ec) { done(ec); });
  });
  if (r.ec || r.timed_out) {
    absl::Status s = IoError("TLS handshake", r);
    if (const auto verify = SSL_get_verify_result(ssl); verify != X509_V_OK && !r.timed_out) {
      s = absl::UnavailableError(absl::StrCat("TLS handshake (", host_header_,
                                              "): server certificate rejected (verifying \"", name,
                                              "\"): ", X509_verify_cert_error_string(verify)));
    }
    Close();
    return s;
  }
  return absl::OkStatus();
}

absl::Status HttpsClient::Send(HttpRequest& request, Deadline deadline, bool& reused) {
  if (cancelled_.load()) return absl::CancelledError("request cancelled");
  request.set(http::field::host, host_header_);
  request.keep_alive(true);
  request.prepare_payload();
  reused = stream_.has_value();
  if (!reused) {
    if (absl::Status s = Dial(deadline); !s.ok()) return s;
  }
  IoResult r = Await(deadline, [&](const Done& done) {
    http::async_write(*stream_, request, [done](error_code ec, size_t) { done(ec); });
  });
  if (r.ec || r.timed_out) {
    absl::Status s = IoError("send request", r);
    Close();
    if (ServerClosedIdle(reused, r)) return Send(request, deadline, reused);
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpResponse> HttpsClient::RoundTrip(HttpRequest& request, Deadline deadline) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    if (absl::Status s = Send(request, deadline, reused); !s.ok()) return s;
    http::response_parser<http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    parser.body_limit(options_.max_body_bytes);
    IoResult r = Await(deadline, [&](const Done& done) {
      http::async_read(*stream_, buffer_, parser, [done](error_code ec, size_t) { done(ec); });
    });
    if (r.ec || r.timed_out) {
      absl::Status s = IoError("read response", r);
      Close();
      // Once: a second failure is the server's answer.
      if (attempt == 0 && !parser.got_some() && ServerClosedIdle(reused, r)) continue;
      return s;
    }
    HttpResponse response = parser.release();
    if (!response.keep_alive()) Close();
    return response;
  }
}

absl::StatusOr<HttpResponse> HttpsClient::Stream(
    HttpRequest& request, Deadline head_deadline, Deadline end_deadline,
    absl::FunctionRef<void(const HttpResponse&)> on_head,
    absl::FunctionRef<absl::Status(absl::string_view)> on_body) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    if (absl::Status s = Send(request, head_deadline, reused); !s.ok()) return s;
    http::response_parser<http::buffer_body> parser;
    parser.header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    parser.body_limit(boost::none);
    IoResult r = Await(head_deadline, [&](const Done& done) {
      http::async_read_header(*stream_, buffer_, parser,
                              [done](error_code ec, size_t) { done(ec); });
    });
    if (r.ec || r.timed_out) {
      absl::Status s = IoError("read response head", r);
      Close();
      // Once: a second failure is the server's answer.
      if (attempt == 0 && !parser.got_some() && ServerClosedIdle(reused, r)) continue;
      return s;
    }

    if (parser.get().result() != http::status::ok) {
      http::response_parser<http::string_body> full(std::move(parser));
      full.body_limit(options_.max_body_bytes);
      r = Await(head_deadline, [&](const Done& done) {
        http::async_read(*stream_, buffer_, full, [done](error_code ec, size_t) { done(ec); });
      });
      if (r.ec || r.timed_out) {
        absl::Status s = IoError("read error response", r);
        Close();
        return s;
      }
      HttpResponse response = full.release();
      if (!response.keep_alive()) Close();
      return response;
    }

    HttpResponse head(parser.get().base());
    on_head(head);
    char chunk[kStreamReadBytes];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      r = Await(end_deadline, [&](const Done& done) {
        http::async_read_some(*stream_, buffer_, parser,
                              [done](error_code ec, size_t) { done(ec); });
      });
      // need_buffer only says the chunk is full; the data in it is good.
      if (r.ec == http::error::need_buffer) r.ec = {};
      if (r.ec || r.timed_out) {
        absl::Status s = IoError("read response body", r);
        Close();
        return s;
      }
      const size_t n = sizeof chunk - parser.get().body().size;
      if (n == 0) continue;
      if (absl::Status s = on_body(absl::string_view(chunk, n)); !s.ok()) {
        Close();
        return s;
      }
    }
    if (!parser.keep_alive()) Close();
    return head;
  }
}

}  // namespace baton::kube

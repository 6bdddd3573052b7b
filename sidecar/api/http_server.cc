#include "sidecar/api/http_server.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/ip/address.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core/basic_stream.hpp"
#include "boost/beast/core/bind_handler.hpp"
#include "boost/beast/core/error.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/read_size.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"
#include "sidecar/api/http_request_reader.h"
#include "sidecar/common/log.h"

namespace baton {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

// The most a single read asks the kernel for; requests here are a few hundred
// bytes, so one read normally takes a whole request.
constexpr size_t kReadChunk = 4096;

std::chrono::steady_clock::duration ToChrono(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      absl::ToChronoNanoseconds(d));
}

int64_t SteadyNowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::Status ParseAddress(const std::string& address, net::ip::address* ip, uint16_t* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\" is not host:port"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  uint32_t port_number = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port_number) || port_number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("address \"", address, "\" has no valid port"));
  }
  error_code ec;
  *ip = net::ip::make_address(host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address, "\": host must be an IP address or localhost"));
  }
  *port = static_cast<uint16_t>(port_number);
  return absl::OkStatus();
}

}  // namespace

// One connection. All its work runs on its own strand (the socket's executor);
// the server thread that admits or drains it only posts to that strand.
class HttpServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer* server, Socket socket)
      : server_(server),
        options_(server->options_),
        stream_(std::move(socket)),
        buffer_(options_.max_header_bytes + options_.max_body_bytes),
        waiting_since_(SteadyNowNanos()) {
    server_->context_->metrics->AddHttpConnections(1);
  }

  ~Session() {
    server_->context_->metrics->AddHttpConnections(-1);
    server_->Forget(this);
  }

  void Start() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::AwaitRequest, shared_from_this()));
  }

  // Closes the connection now, whatever it is doing. Any thread.
  void Close() {
    net::post(stream_.get_executor(),
              beast::bind_front_handler(&Session::CloseNow, shared_from_this()));
  }

  // Closes the connection if it is idle, or after the answer it is working
  // on (sent with Connection: close). Any thread.
  void Drain() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->draining_ = true;
      if (self->idle_) self->CloseNow();
    });
  }

  // When this connection began waiting for its current request: when it was
  // accepted, or when its previous answer was written (steady clock, ns).
  // Not reset by bytes arriving, so a client trickling a request ages like
  // an idle one. Any thread.
  int64_t WaitingSinceNanos() const { return waiting_since_.load(std::memory_order_relaxed); }

 private:
  void AwaitRequest() {
    if (draining_) return CloseNow();
    // Pipelined bytes are already here: that request has begun.
    if (buffer_.size() > 0) return ReadRequest();
    idle_ = true;
    stream_.expires_after(ToChrono(options_.idle_timeout));
    stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kReadChunk)),
                            beast::bind_front_handler(&Session::OnFirstBytes, shared_from_this()));
  }

  void OnFirstBytes(error_code ec, size_t bytes) {
    idle_ = false;
    if (ec) return CloseNow();  // idle timeout, peer closed, or drained
    buffer_.commit(bytes);
    ReadRequest();
  }

  void ReadRequest() {
    parser_.emplace();
    LimitRequestParser(options_.max_header_bytes, options_.max_body_bytes, *parser_);
    stream_.expires_after(ToChrono(options_.request_timeout));
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(error_code ec, size_t) {
    if (ec) {
      std::optional<HttpRouter::Response> answer = AnswerForReadError(ec, *parser_);
      if (!answer) return CloseNow();
      response_ = *std::move(answer);
      spdlog::debug("event=http_bad_request status={} reason={} action=answer_and_close",
                    response_.result_int(),
                    LogValue(std::string(absl::StripTrailingAsciiWhitespace(response_.body()))));
      server_->context_->metrics->ObserveHttpRequest("other",
                                                     static_cast<int>(response_.result_int()));
      return Write();
    }
    response_ = server_->router_.Handle(parser_->get());
    if (draining_) response_.keep_alive(false);
    Write();
  }

  void Write() {
    stream_.expires_after(ToChrono(options_.write_timeout));
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(error_code ec, size_t) {
    if (ec) return CloseNow();
    if (response_.keep_alive()) {
      waiting_since_.store(SteadyNowNanos(), std::memory_order_relaxed);
      return AwaitRequest();
    }
    // Half-close, then read and drop whatever the client still sends, so a
    // client that is mid-way through an oversized request reads our answer
    // instead of a reset.
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return CloseNow();
    stream_.expires_after(ToChrono(options_.close_linger));
    Linger();
  }

  void Linger() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kReadChunk)),
                            [self = shared_from_this()](error_code ec, size_t) {
                              if (ec) return self->CloseNow();
                              self->Linger();
                            });
  }

  void CloseNow() {
    idle_ = false;
    stream_.close();
  }

  HttpServer* const server_;
  const HttpServerOptions& options_;
  beast::basic_stream<tcp, Strand> stream_;
  beast::flat_buffer buffer_;
  std::optional<HttpRequestParser> parser_;
  HttpRouter::Response response_;
  bool draining_ = false;
  // Waiting for the first byte of a request (strand only).
  bool idle_ = false;
  std::atomic<int64_t> waiting_since_;
};

HttpServer::HttpServer(HttpServerOptions options, const ApiContext* context)
    : options_(std::move(options)),
      context_(context),
      router_(options_.routes, options_.leader_cache_window, context),
      ioc_(options_.threads),
      acceptor_(net::make_strand(ioc_)),
      accept_backoff_timer_(acceptor_.get_executor()) {}

HttpServer::~HttpServer() { Shutdown(absl::Now()); }

absl::Status HttpServer::Start() {
  net::ip::address ip;
  uint16_t port = 0;
  if (absl::Status status = ParseAddress(options_.address, &ip, &port); !status.ok()) {
    return status;
  }
  const tcp::endpoint endpoint(ip, port);
  error_code ec;
  auto fail = [&](absl::string_view what) {
    return absl::UnavailableError(
        absl::StrCat("HTTP server on ", options_.address, ": ", what, ": ", ec.message()));
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (ec) return fail("SO_REUSEADDR");
  acceptor_.bind(endpoint, ec);
  if (ec) return fail("bind");
  acceptor_.listen(options_.listen_backlog, ec);
  if (ec) return fail("listen");
  const int bound_port = acceptor_.local_endpoint(ec).port();
  if (ec) return fail("local_endpoint");
  {
    absl::MutexLock lock(&mu_);
    port_ = bound_port;
  }

  net::dispatch(acceptor_.get_executor(), [this] { Accept(); });
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] {
      // Handlers do not throw; should one ever, log it and keep serving
      // rather than take the sidecar down.
      for (;;) {
        try {
          ioc_.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("event=http_handler_exception what={} action=continue", LogValue(e.what()));
        }
      }
    });
  }
  spdlog::info("event=http_listening addr={} port={}", options_.address, bound_port);
  return absl::OkStatus();
}

int HttpServer::port() const {
  absl::MutexLock lock(&mu_);
  return port_;
}

void HttpServer::Accept() {
  acceptor_.async_accept(net::make_strand(ioc_),
                         beast::bind_front_handler(&HttpServer::OnAccept, this));
}

void HttpServer::OnAccept(error_code ec, Socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    spdlog::warn("event=http_accept_failed error={} action=retry_after_backoff",
                 LogValue(ec.message()));
    accept_backoff_timer_.expires_after(ToChrono(options_.accept_backoff));
    accept_backoff_timer_.async_wait([this](error_code wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  Admit(std::move(socket));
  Accept();
}

void HttpServer::Admit(Socket socket) {
  std::shared_ptr<Session> victim;
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;  // `socket` closes as it goes out of scope
    if (sessions_.size() >= static_cast<size_t>(options_.max_connections)) {
      // The victim leaves the table now, before its strand closes it, so
      // each eviction frees exactly one slot and no connection is picked
      // twice. A session already being destroyed has freed its slot.
      const Session* victim_key = nullptr;
      int64_t oldest = 0;
      for (const auto& [key, weak] : sessions_) {
        std::shared_ptr<Session> candidate = weak.lock();
        if (!candidate) {
          victim_key = key;
          victim.reset();
          break;
        }
        const int64_t since = candidate->WaitingSinceNanos();
        if (victim_key == nullptr || since < oldest) {
          victim_key = key;
          oldest = since;
          victim = std::move(candidate);
        }
      }
      sessions_.erase(victim_key);
    }
    session = std::make_shared<Session>(this, std::move(socket));
    sessions_.emplace(session.get(), session);
  }
  if (victim) {
    spdlog::debug("event=http_connection_evicted reason=max_connections limit={}",
                  options_.max_connections);
    victim->Close();
  }
  session->Start();
}

void HttpServer::Forget(const Session* session) {
  absl::MutexLock lock(&mu_);
  sessions_.erase(session);
}

void HttpServer::Shutdown(absl::Time deadline) {
  std::vector<std::shared_ptr<Session>> live;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      // Another caller is (or was) doing it; wait for it to finish.
      mu_.Await(absl::Condition(&stopped_));
      return;
    }
    shutting_down_ = true;
    for (const auto& [key, weak] : sessions_) {
      if (std::shared_ptr<Session> s = weak.lock()) live.push_back(std::move(s));
    }
  }
  net::post(acceptor_.get_executor(), [this] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_backoff_timer_.cancel();
  });
  for (const auto& s : live) s->Drain();
  live.clear();
  {
    absl::MutexLock lock(&mu_);
    auto all_closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sessions_.empty(); };
    if (!threads_.empty()) mu_.AwaitWithDeadline(absl::Condition(&all_closed), deadline);
  }
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

}  // namespace baton

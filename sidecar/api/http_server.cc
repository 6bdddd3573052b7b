#include "sidecar/api/http_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/dispatch.hpp"
#include "boost/asio/ip/address.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/basic_stream.hpp"
#include "boost/beast/core/bind_handler.hpp"
#include "boost/beast/core/error.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/read_size.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"
#include "sidecar/api/http_request_reader.h"
#include "sidecar/common/listen_address.h"
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

}  // namespace

// One connection's request loop: waits for a request, reads it, answers it
// and waits for the next (keep-alive, pipelining), each step within its
// deadline. All its work runs on its own strand (the socket's executor); the
// server thread that admits or drains it only posts to that strand.
//
// GET /leader/watch hands the connection to a WatchStream for the rest of its
// life; the session then reads no more requests, and answers only the 503 of
// a refused stream.
class HttpServer::Session final : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpServer* server, Socket socket)
      : server_(server),
        options_(server->options_),
        stream_(std::move(socket)),
        buffer_(options_.max_header_bytes + options_.max_body_bytes),
        waiting_since_(server->NextWaitTicket()) {
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

  // Shutdown, once no thread runs the event loop any more: lets go of an
  // event stream that did not end by the deadline.
  void Abandon();

  // When this connection began waiting for its current request, as the
  // server's wait ticket (lower: earlier): when it was accepted, or when its
  // previous answer was written. Not renewed by bytes arriving, so a client
  // trickling a request ages like an idle one. Any thread.
  uint64_t WaitingSince() const { return waiting_since_.load(std::memory_order_relaxed); }

 private:
  friend class WatchStream;

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
    HttpRouter::Reply reply = server_->router_.Handle(parser_->get());
    if (reply.stream) return OpenStream(std::move(reply));
    response_ = std::move(reply.response);
    if (draining_) response_.keep_alive(false);
    Write();
  }

  // Hands the connection to a WatchStream, unless it was evicted meanwhile.
  void OpenStream(HttpRouter::Reply reply);

  // The 503 of a stream refused before its head went out: an ordinary error
  // answer, after which the connection counts as a request connection again.
  void RefuseStream(absl::string_view reason, unsigned version) {
    server_->SetStreaming(this, false);
    server_->context_->metrics->ObserveHttpRequest(kWatchRoute, 503);
    response_ = HttpRouter::Error(http::status::service_unavailable, reason, version);
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
      waiting_since_.store(server_->NextWaitTicket(), std::memory_order_relaxed);
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

  static constexpr char kWatchRoute[] = "/leader/watch";

  HttpServer* const server_;
  const HttpServerOptions& options_;
  beast::basic_stream<tcp, Strand> stream_;
  beast::flat_buffer buffer_;
  std::optional<HttpRequestParser> parser_;
  HttpRouter::Response response_;
  bool draining_ = false;
  // Waiting for the first byte of a request (strand only).
  bool idle_ = false;
  std::atomic<uint64_t> waiting_since_;
  // The stream the connection became, if it did (strand only, and Abandon).
  std::weak_ptr<WatchStream> watch_;
};

// The event stream of GET /leader/watch on a Session's connection: a Stream
// of the server's SseLeadershipStreams, which calls Send and End from any
// thread; both only post to the connection's strand, where all the rest
// runs. It writes the head with the first event, then events, heartbeat
// comments after silences, and on an orderly end the last chunk; it reads
// only to see the client go away. While registered with the streams it keeps
// itself, and so its Session, alive (self_).
class HttpServer::WatchStream final : public std::enable_shared_from_this<WatchStream>,
                                      public SseLeadershipStreams::Stream {
 public:
  WatchStream(std::shared_ptr<Session> session, const HttpRouter::Response& head,
              absl::Duration heartbeat)
      : session_(std::move(session)),
        server_(session_->server_),
        head_(HeadBytes(head)),
        chunked_(head.chunked()),
        version_(head.version()),
        heartbeat_(ToChrono(heartbeat)),
        timer_(session_->stream_.get_executor()) {}

  // Registers with the server's streams, which send the first event or
  // refuse the stream, both through the strand. `state_heartbeat`: see
  // SseLeadershipStreams::Open.
  void Open(Reader reader, absl::Duration state_heartbeat) {
    self_ = shared_from_this();
    server_->watches_->Open(this, std::move(reader), state_heartbeat);
  }

  // See Session::Abandon.
  void Abandon() {
    if (self_ == nullptr) return;
    Done();
    self_.reset();
  }

  // Any thread.
  void Send(const std::string& event) override {
    net::post(executor(), [self = shared_from_this(), &event] {
      self->pending_event_ = &event;
      self->WriteNext();
    });
  }

  // Any thread.
  void End(const absl::Status& status) override {
    net::post(executor(), [self = shared_from_this(), status] {
      self->end_ = status;
      self->WriteNext();
    });
  }

 private:
  Strand executor() const { return session_->stream_.get_executor(); }
  beast::basic_stream<tcp, Strand>& socket() { return session_->stream_; }

  // The head as it goes on the wire, status line to blank line.
  static std::string HeadBytes(const HttpRouter::Response& head) {
    std::ostringstream out;
    out << head.base();
    return std::move(out).str();
  }

  // `data` framed as the next piece of the body.
  void AppendBody(std::string_view data) {
    if (chunked_) absl::StrAppend(&out_, absl::Hex(data.size()), "\r\n");
    out_.append(data);
    if (chunked_) out_ += "\r\n";
  }

  // Starts whatever the stream has to write next, unless a write is on the
  // socket: the pending event, else the end.
  void WriteNext() {
    if (writing_) return;
    if (pending_event_ != nullptr) {
      out_.clear();
      if (!head_sent_) {
        head_sent_ = true;
        out_ = head_;
        server_->context_->metrics->ObserveHttpRequest(Session::kWatchRoute, 200);
        // Only now: until the head is out, the socket may still carry the
        // 503 of a refusal, read by the session's Linger.
        ReadUntilClientLeaves();
      }
      AppendBody(*pending_event_);
      pending_event_ = nullptr;
      return StartWrite(/*carries_event=*/true);
    }
    if (end_) Finish();
  }

  void Finish() {
    const absl::Status status = *std::exchange(end_, std::nullopt);
    // From here the streams no longer reach this stream.
    Done();
    std::shared_ptr<WatchStream> self = std::exchange(self_, nullptr);
    if (!head_sent_) return session_->RefuseStream(status.message(), version_);
    if (!status.ok() || broken_) return CloseNow();
    // Shutdown: the last chunk, then close as after any final answer.
    ending_ = true;
    out_ = chunked_ ? "0\r\n\r\n" : "";
    StartWrite(/*carries_event=*/false);
  }

  void StartWrite(bool carries_event) {
    writing_ = true;
    write_carries_event_ = carries_event;
    socket().expires_after(ToChrono(session_->options_.write_timeout));
    net::async_write(socket(), net::buffer(out_),
                     beast::bind_front_handler(&WatchStream::OnWrite, shared_from_this()));
  }

  void OnWrite(error_code ec, size_t) {
    writing_ = false;
    if (ec) {
      broken_ = true;
      CloseNow();
    }
    if (ending_) {
      if (ec) return;
      // Half-close and wait (bounded) for the client to close its side:
      // ReadUntilClientLeaves closes on its EOF, the timer otherwise.
      socket().socket().shutdown(tcp::socket::shutdown_send, ec);
      timer_.expires_after(ToChrono(session_->options_.close_linger));
      timer_.async_wait([self = shared_from_this()](error_code wait_ec) {
        if (!wait_ec) self->CloseNow();
      });
      return;
    }
    if (!ec) ArmHeartbeat();
    if (std::exchange(write_carries_event_, false)) {
      WriteDone(!ec);  // may Send or End, which post
    } else if (ec) {
      Cancelled();
    }
    WriteNext();
  }

  void ArmHeartbeat() {
    timer_.expires_after(heartbeat_);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->writing_ || self->broken_) return;
      self->out_.clear();
      self->AppendBody(kSseHeartbeat);
      self->StartWrite(/*carries_event=*/false);
    });
  }

  // Reads, and drops, whatever the client sends, to see it go away (EOF or
  // reset) without waiting for a write to fail.
  void ReadUntilClientLeaves() {
    socket().socket().async_read_some(net::buffer(discard_),
                                      [self = shared_from_this()](error_code ec, size_t) {
                                        if (!ec) return self->ReadUntilClientLeaves();
                                        if (self->ending_) return self->CloseNow();
                                        self->broken_ = true;
                                        self->Cancelled();
                                      });
  }

  void CloseNow() {
    timer_.cancel();
    session_->CloseNow();
  }

  const std::shared_ptr<Session> session_;
  HttpServer* const server_;
  const std::string head_;
  const bool chunked_;
  const unsigned version_;
  const std::chrono::steady_clock::duration heartbeat_;
  // The heartbeat, then the final linger.
  net::steady_timer timer_;

  // All strand only.
  std::shared_ptr<WatchStream> self_;  // while registered
  bool head_sent_ = false;
  bool writing_ = false;
  bool write_carries_event_ = false;            // the write on the socket is an event
  bool broken_ = false;                         // a write failed or the client left
  bool ending_ = false;                         // the last chunk is being written
  std::string out_;                             // the bytes of the write on the socket
  const std::string* pending_event_ = nullptr;  // Send()'s, alive until WriteDone
  std::optional<absl::Status> end_;             // End()'s, once
  std::array<char, 512> discard_{};
};

void HttpServer::Session::Abandon() {
  if (std::shared_ptr<WatchStream> watch = watch_.lock()) watch->Abandon();
}

void HttpServer::Session::OpenStream(HttpRouter::Reply reply) {
  if (!server_->SetStreaming(this, true)) return CloseNow();  // evicted meanwhile
  auto watch = std::make_shared<WatchStream>(shared_from_this(), reply.response,
                                             server_->WatchHeartbeat(reply.stream->heartbeat));
  watch_ = watch;
  // ?heartbeat= asks for the state itself at that interval, a fresh promise
  // while leading, as WatchLeadership's heartbeat_interval does; without it
  // only the comment fills the silence.
  const absl::Duration state_heartbeat = reply.stream->heartbeat
                                             ? server_->WatchHeartbeat(reply.stream->heartbeat)
                                             : absl::ZeroDuration();
  watch->Open(std::move(reply.stream->reader), state_heartbeat);
}

HttpServer::HttpServer(HttpServerOptions options, const ApiContext* context)
    : options_(std::move(options)),
      context_(context),
      router_(options_.routes, options_.leader_cache_window, context),
      ioc_(options_.threads),
      acceptor_(net::make_strand(ioc_)),
      accept_backoff_timer_(acceptor_.get_executor()) {
  if (options_.routes != HttpRoutes::kApi) return;
  watch_source_ = std::make_unique<SseLeadershipSource>(context, &SseLeadershipEvent);
  // A write here only posts to the connection's strand: no fan-out threads.
  watches_ = std::make_unique<SseLeadershipStreams>(
      WatchStreamsOptions{.max_streams = options_.max_watchers,
                          .min_heartbeat_interval = options_.min_watch_heartbeat,
                          .clock = context->wait_clock},
      watch_source_.get(), context->metrics);
  refresher_ = std::make_unique<WatchRefresher>(context, options_.watch_refresh_interval,
                                                [this] { return watches_->Refresh(); });
}

HttpServer::~HttpServer() { Shutdown(context_->wait_clock->Monotonic()); }

absl::Status HttpServer::Start() {
  absl::StatusOr<ListenAddress> address = ParseListenAddress(options_.address);
  if (!address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("HTTP server on ", options_.address, ": ", address.status().message()));
  }
  error_code ec;
  const tcp::endpoint endpoint(net::ip::make_address(address->ip, ec), address->port);
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
  if (refresher_ != nullptr) refresher_->Start();
  for (int i = 0; i < options_.threads; ++i) {
    // Handlers do not throw. One that did would leave its session, and
    // perhaps what it was answering, half done; rather than serve on from
    // that state, the exception ends the process (fail-stop): readers then
    // get no answer, and the Lease's expiry covers every promise given.
    threads_.emplace_back([this] { ioc_.run(); });
  }
  spdlog::info("event=http_listening addr={} port={}", options_.address, bound_port);
  return absl::OkStatus();
}

int HttpServer::port() const {
  absl::MutexLock lock(&mu_);
  return port_;
}

int HttpServer::watchers() const { return watches_ == nullptr ? 0 : watches_->size(); }

absl::Duration HttpServer::WatchHeartbeat(std::optional<absl::Duration> asked) const {
  const absl::Duration heartbeat =
      std::min(asked.value_or(options_.watch_heartbeat), options_.watch_heartbeat);
  return std::max(heartbeat, options_.min_watch_heartbeat);
}

bool HttpServer::SetStreaming(const Session* session, bool streaming) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return false;
  if (it->second.streaming != streaming) {
    it->second.streaming = streaming;
    streaming ? ++streaming_ : --streaming_;
  }
  return true;
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
    if (sessions_.size() - streaming_ >= static_cast<size_t>(options_.max_connections)) {
      // The victim leaves the table now, before its strand closes it, so
      // each eviction frees exactly one slot and no connection is picked
      // twice. A session already being destroyed has freed its slot. Event
      // streams are never picked: they are not waiting for anything.
      const Session* victim_key = nullptr;
      uint64_t oldest = 0;
      for (const auto& [key, connection] : sessions_) {
        if (connection.streaming) continue;
        std::shared_ptr<Session> candidate = connection.session.lock();
        if (!candidate) {
          victim_key = key;
          victim.reset();
          break;
        }
        const uint64_t since = candidate->WaitingSince();
        if (victim_key == nullptr || since < oldest) {
          victim_key = key;
          oldest = since;
          victim = std::move(candidate);
        }
      }
      sessions_.erase(victim_key);
    }
    session = std::make_shared<Session>(this, std::move(socket));
    sessions_.emplace(session.get(), Connection{session});
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
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  if (it->second.streaming) --streaming_;
  sessions_.erase(it);
}

void HttpServer::Shutdown(MonoTime deadline) {
  std::vector<std::shared_ptr<Session>> live;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      // Another caller is (or was) doing it; wait for it to finish.
      mu_.Await(absl::Condition(&stopped_));
      return;
    }
    shutting_down_ = true;
    for (const auto& [key, connection] : sessions_) {
      if (std::shared_ptr<Session> s = connection.session.lock()) live.push_back(std::move(s));
    }
  }
  net::post(acceptor_.get_executor(), [this] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_backoff_timer_.cancel();
  });
  if (refresher_ != nullptr) {
    // The last word on every stream is the latest state (stepping down, on
    // an orderly shutdown), then its end.
    refresher_->Stop();
    watches_->Refresh();
    watches_->FinishAll();
  }
  for (const auto& s : live) s->Drain();
  live.clear();
  {
    absl::MutexLock lock(&mu_);
    auto all_closed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sessions_.empty(); };
    if (!threads_.empty()) {
      context_->wait_clock->AwaitUntil(&mu_, absl::Condition(&all_closed), deadline);
    }
  }
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
  // Streams that did not end by the deadline: nothing runs them any more.
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, connection] : sessions_) {
      if (std::shared_ptr<Session> s = connection.session.lock()) live.push_back(std::move(s));
    }
  }
  for (const auto& s : live) s->Abandon();
  live.clear();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

}  // namespace baton

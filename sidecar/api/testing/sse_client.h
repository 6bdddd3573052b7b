// SseClient: a blocking test client of GET /leader/watch that takes the
// stream apart as it arrives: the response head, then the chunked (HTTP/1.1)
// or connection-delimited (HTTP/1.0) body, split into Server-Sent Events.
// Every read has a deadline, so a server that stops sending fails the test
// instead of hanging it.
//
// Not thread-safe; one client per test thread.
#ifndef BATON_SIDECAR_API_TESTING_SSE_CLIENT_H_
#define BATON_SIDECAR_API_TESTING_SSE_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace baton::testing {

// One event, or one comment, of the stream.
struct SseEvent {
  std::string event;    // the `event:` field; empty for a comment
  std::string data;     // the `data:` field (one line here)
  std::string comment;  // the text after ':' of a comment line
};

class SseClient {
 public:
  struct Options {
    std::string target = "/leader/watch";
    bool http10 = false;
    // SO_RCVBUF before connecting, to make a client that stops reading stall
    // the server quickly; 0: the default.
    int receive_buffer = 0;
  };

  // Connects to 127.0.0.1:port and sends the request; check connected().
  SseClient(int port, const Options& options) : http10_(options.http10) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (options.receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &options.receive_buffer,
                   sizeof(options.receive_buffer));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string request = "GET " + options.target +
                                (http10_ ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n") +
                                "Host: localhost\r\nAccept: text/event-stream\r\n\r\n";
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
            static_cast<ssize_t>(request.size())) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  explicit SseClient(int port) : SseClient(port, Options()) {}
  explicit SseClient(int port, const std::string& target)
      : SseClient(port, Options{.target = target}) {}
  ~SseClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  SseClient(const SseClient&) = delete;
  SseClient& operator=(const SseClient&) = delete;

  bool connected() const { return fd_ >= 0; }

  // The response head (status line and headers, without the blank line);
  // nullopt if it does not arrive within `timeout`.
  std::optional<std::string> Head(absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!head_) {
      const size_t end = raw_.find("\r\n\r\n");
      if (end != std::string::npos) {
        head_ = raw_.substr(0, end);
        raw_.erase(0, end + 4);
        chunked_ = absl::StrContains(*head_, "Transfer-Encoding: chunked");
        break;
      }
      if (!ReadSome(deadline)) return std::nullopt;
    }
    return head_;
  }

  // The next event or comment; nullopt if none arrives within `timeout` or
  // the stream ended (see ended()).
  std::optional<SseEvent> Next(absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    if (!Head(timeout)) return std::nullopt;
    for (;;) {
      Decode();
      const size_t end = body_.find("\n\n");
      if (end != std::string::npos) {
        SseEvent e;
        for (absl::string_view line : absl::StrSplit(body_.substr(0, end), '\n')) {
          if (absl::ConsumePrefix(&line, "event: ")) e.event = std::string(line);
          if (absl::ConsumePrefix(&line, "data: ")) e.data = std::string(line);
          if (absl::ConsumePrefix(&line, ":"))
            e.comment = std::string(absl::StripLeadingAsciiWhitespace(line));
        }
        body_.erase(0, end + 2);
        return e;
      }
      if (ended() || !ReadSome(deadline)) return std::nullopt;
    }
  }

  // The next event that is not a comment.
  std::optional<SseEvent> NextEvent(absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      std::optional<SseEvent> e = Next(deadline - absl::Now());
      if (!e || !e->event.empty()) return e;
    }
  }

  // The stream ended properly: the last chunk arrived (HTTP/1.1), or the
  // server closed the connection (HTTP/1.0).
  bool ended() const { return last_chunk_ || (http10_ && closed_); }
  // The server closed the connection.
  bool closed() const { return closed_; }

  // Waits until the server closes the connection, reading what comes.
  bool WaitClosed(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!closed_) {
      if (!ReadSome(deadline) && !closed_) return false;
    }
    Decode();
    return true;
  }

 private:
  // Moves the complete chunks of raw_ (or, for HTTP/1.0, everything) into
  // body_.
  void Decode() {
    if (!chunked_) {
      body_ += raw_;
      raw_.clear();
      return;
    }
    for (;;) {
      const size_t line_end = raw_.find("\r\n");
      if (line_end == std::string::npos) return;
      size_t size = 0;
      if (!absl::SimpleHexAtoi(raw_.substr(0, line_end), &size)) std::abort();
      if (raw_.size() < line_end + 2 + size + 2) return;
      body_ += raw_.substr(line_end + 2, size);
      raw_.erase(0, line_end + 2 + size + 2);
      if (size == 0) last_chunk_ = true;
    }
  }

  // Appends what arrives before `deadline`; false on timeout or close.
  bool ReadSome(absl::Time deadline) {
    if (closed_) return false;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready <= 0) return false;
    char buffer[16 * 1024];
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    raw_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  const bool http10_;
  int fd_ = -1;
  bool closed_ = false;
  bool chunked_ = false;
  bool last_chunk_ = false;
  std::optional<std::string> head_;
  std::string raw_;   // as received, after the head
  std::string body_;  // decoded, not yet split into events
};

}  // namespace baton::testing

#endif  // BATON_SIDECAR_API_TESTING_SSE_CLIENT_H_

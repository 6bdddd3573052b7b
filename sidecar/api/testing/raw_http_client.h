// RawHttpConnection: a blocking TCP client for tests that need full control
// over what goes on the wire (malformed, partial, slow or oversized
// requests), with a deadline on every read so a misbehaving server fails the
// test instead of hanging it. Responses are parsed with Beast's parser.
//
// Not thread-safe; one connection per test thread.
#ifndef BATON_SIDECAR_API_TESTING_RAW_HTTP_CLIENT_H_
#define BATON_SIDECAR_API_TESTING_RAW_HTTP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/string_body.hpp"

namespace baton::testing {

using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// Appends to `out` what socket `fd` receives before `deadline`; false on
// timeout, or once the peer has closed (which sets `*closed`; no read is
// tried after that).
inline bool ReceiveSome(int fd, absl::Time deadline, std::string* out, bool* closed) {
  if (*closed) return false;
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return false;
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
  if (ready <= 0) return false;
  char buffer[16 * 1024];
  const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
  if (n <= 0) {
    *closed = true;
    return false;
  }
  out->append(buffer, static_cast<size_t>(n));
  return true;
}

class RawHttpConnection {
 public:
  // Connects to 127.0.0.1:port; check connected().
  explicit RawHttpConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) {
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
  }
  ~RawHttpConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawHttpConnection(const RawHttpConnection&) = delete;
  RawHttpConnection& operator=(const RawHttpConnection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Writes all of `data`; false if the connection broke.
  bool Send(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads one response (headers only for HEAD). nullopt if the connection
  // closed or `timeout` passed first.
  std::optional<HttpResponse> ReadResponse(absl::Duration timeout = absl::Seconds(5),
                                           bool head = false) {
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    parser.eager(true);
    parser.skip(head);
    parser.body_limit(uint64_t{16} << 20);
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      if (!pending_.empty()) {
        boost::system::error_code ec;
        const size_t used = parser.put(boost::asio::buffer(pending_), ec);
        pending_.erase(0, used);
        if (ec && ec != boost::beast::http::error::need_more) return std::nullopt;
        if (parser.is_done()) return parser.release();
        if (used > 0 && !pending_.empty()) continue;
      }
      if (!ReadSome(deadline)) {
        // A response delimited by the connection closing.
        if (closed_ && parser.is_header_done() && parser.need_eof()) {
          boost::system::error_code ec;
          parser.put_eof(ec);
          if (!ec) return parser.release();
        }
        return std::nullopt;
      }
    }
  }

  // Sends `request` and reads its response.
  std::optional<HttpResponse> RoundTrip(const std::string& request,
                                        absl::Duration timeout = absl::Seconds(5)) {
    if (!Send(request)) return std::nullopt;
    return ReadResponse(timeout, request.rfind("HEAD ", 0) == 0);
  }

  // True if the server closes the connection (EOF or reset) within
  // `timeout`, discarding anything it sends first.
  bool WaitClosed(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!closed_) {
      if (!ReadSome(deadline) && !closed_) return false;
      pending_.clear();
    }
    return true;
  }

  // Resets the connection (RST instead of FIN) and forgets it.
  void Abort() {
    linger option{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &option, sizeof(option));
    ::close(fd_);
    fd_ = -1;
  }

 private:
  bool ReadSome(absl::Time deadline) { return ReceiveSome(fd_, deadline, &pending_, &closed_); }

  int fd_ = -1;
  bool closed_ = false;
  std::string pending_;
};

// "GET <target> HTTP/1.1" with a Host header and nothing else.
inline std::string Get(const std::string& target, const std::string& method = "GET") {
  return method + " " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
}

}  // namespace baton::testing

#endif  // BATON_SIDECAR_API_TESTING_RAW_HTTP_CLIENT_H_

// Bytes from an HTTP client, read as HttpServer's sessions read them —
// the request reader's limits, Beast's parser, several requests pipelined on
// one connection, a read size of the input's choosing — and answered by
// HttpRouter (either route set). Every answer must serialize to a response
// that Beast parses back with the Content-Length it claims (a stream's HEAD
// answer claims none and closes), and unreadable requests must close the
// connection.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "boost/asio/io_context.hpp"
#include "boost/beast/_experimental/test/stream.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"
#include "fuzz/fuzz_check.h"
#include "sidecar/api/http_request_reader.h"
#include "sidecar/api/http_router.h"
#include "sidecar/api/http_server.h"
#include "sidecar/api/testing/api_test_env.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// At most this many requests are read from one input.
constexpr int kMaxRequests = 64;

struct Routers {
  Routers() {
    env.context.hooks.resign = [] { return absl::OkStatus(); };
    env.publisher.Publish(baton::testing::Leading(env.clock, 7));
  }
  baton::testing::ApiTestEnv env;
  const baton::HttpServerOptions options;
  const baton::HttpRouter api{baton::HttpRoutes::kApi, options.leader_cache_window, &env.context};
  const baton::HttpRouter probes{baton::HttpRoutes::kProbesAndMetrics, options.leader_cache_window,
                                 &env.context};
};

// The answer to HEAD /leader/watch: the stream's head, which has no length
// to claim (a Content-Length must be the GET body's) and no body to frame.
void CheckStreamHead(const baton::HttpRouter::Response& response) {
  FUZZ_CHECK(response.result() == http::status::ok && !response.keep_alive());
  FUZZ_CHECK(!response.has_content_length() && !response.chunked());
  FUZZ_CHECK(response.body().empty());
}

// The answer as it goes on the wire, parsed back.
void CheckWireForm(const baton::HttpRouter::Response& response, bool head) {
  std::ostringstream wire;
  wire << response;
  const std::string bytes = wire.str();
  http::response_parser<http::string_body> parser;
  parser.skip(head);
  parser.body_limit(64 << 20);
  boost::system::error_code ec;
  size_t at = 0;
  while (!ec && !parser.is_done() && at < bytes.size()) {
    at += parser.put(boost::asio::buffer(bytes.data() + at, bytes.size() - at), ec);
  }
  FUZZ_CHECK(!ec);
  FUZZ_CHECK(at == bytes.size());
  FUZZ_CHECK(parser.is_done());
  if (!head) FUZZ_CHECK(parser.get().body() == response.body());
  FUZZ_CHECK(parser.content_length().has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Routers* const routers = new Routers;
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const baton::HttpRouter& router = (control & 1) != 0 ? routers->probes : routers->api;
  const baton::HttpServerOptions& options = routers->options;

  boost::asio::io_context ioc;
  beast::test::stream stream(ioc);
  stream.read_size(1 + (control >> 1));  // 1..128 bytes per read
  stream.append(beast::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  stream.close();
  beast::flat_buffer buffer(options.max_header_bytes + options.max_body_bytes);

  for (int i = 0; i < kMaxRequests; ++i) {
    baton::HttpRequestParser parser;
    baton::LimitRequestParser(options.max_header_bytes, options.max_body_bytes, parser);
    boost::system::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec) {
      std::optional<baton::HttpRouter::Response> answer = baton::AnswerForReadError(ec, parser);
      if (!answer) break;
      FUZZ_CHECK(!answer->keep_alive());
      CheckWireForm(*answer, false);
      break;
    }
    const bool head = parser.get().method() == http::verb::head;
    baton::HttpRouter::Reply reply = router.Handle(parser.get());
    if (reply.stream) {
      // An event stream's head: the connection is the stream's from here.
      FUZZ_CHECK(reply.response.result() == http::status::ok && !reply.response.keep_alive());
      break;
    }
    if (head && reply.response[http::field::content_type] == "text/event-stream") {
      CheckStreamHead(reply.response);
      break;
    }
    CheckWireForm(reply.response, head);
    if (!reply.response.keep_alive()) break;
  }
  return 0;
}

// How HttpServer reads one request off a connection, apart from the socket:
// Beast's request parser with the server's header and body limits, and the
// answer to a request the parser refused. HttpServer's sessions and the HTTP
// fuzz target (fuzz/http_request_fuzzer.cc) both read requests this way.
//
// Pure functions; thread-safe.
#ifndef BATON_SIDECAR_API_HTTP_REQUEST_READER_H_
#define BATON_SIDECAR_API_HTTP_REQUEST_READER_H_

#include <cstddef>
#include <optional>

#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/string_body.hpp"
#include "boost/system/error_code.hpp"
#include "sidecar/api/http_router.h"

namespace baton {

using HttpRequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Limits `parser` (fresh, for one request) to `max_header_bytes` of request
// line plus headers and `max_body_bytes` of body.
void LimitRequestParser(size_t max_header_bytes, size_t max_body_bytes, HttpRequestParser& parser);

// The answer to a request that `parser` could not read because of `ec`: 431
// (header too large), 413 (body too large) or 400 (malformed), with
// Connection: close, in HTTP/1.0 or 1.1 as the request line asked. nullopt
// when there is no one to answer (the peer went away, a timeout, a
// cancellation): then the connection is just closed.
std::optional<HttpRouter::Response> AnswerForReadError(const boost::system::error_code& ec,
                                                       const HttpRequestParser& parser);

}  // namespace baton

#endif  // BATON_SIDECAR_API_HTTP_REQUEST_READER_H_

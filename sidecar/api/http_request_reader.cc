#include "sidecar/api/http_request_reader.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "boost/beast/http/error.hpp"

namespace baton {

namespace http = boost::beast::http;

void LimitRequestParser(size_t max_header_bytes, size_t max_body_bytes, HttpRequestParser& parser) {
  parser.header_limit(static_cast<uint32_t>(max_header_bytes));
  parser.body_limit(max_body_bytes);
}

std::optional<HttpRouter::Response> AnswerForReadError(const boost::system::error_code& ec,
                                                       const HttpRequestParser& parser) {
  // The request line may not have been parsed; answer 1.0 or 1.1 only.
  const unsigned version = parser.get().version() == 10 ? 10 : 11;
  const bool header_too_large = ec == http::error::header_limit ||
                                (ec == http::error::buffer_overflow && !parser.is_header_done());
  const bool body_too_large = ec == http::error::body_limit ||
                              (ec == http::error::buffer_overflow && parser.is_header_done());
  if (header_too_large) {
    return HttpRouter::Error(http::status::request_header_fields_too_large,
                             "request header too large", version);
  }
  if (body_too_large) {
    return HttpRouter::Error(http::status::payload_too_large, "request body too large", version);
  }
  // end_of_stream and partial_message mean the client went away.
  if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return HttpRouter::Error(http::status::bad_request, absl::StrCat("bad request: ", ec.message()),
                             version);
  }
  return std::nullopt;
}

}  // namespace baton

#include "sidecar/common/listen_address.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace baton {

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError("not host:port");
  }
  ListenAddress address;
  uint32_t port = 0;
  if (!absl::SimpleAtoi(text.substr(colon + 1), &port) || port > 65535 ||
      text.substr(colon + 1).find_first_not_of("0123456789") != absl::string_view::npos) {
    return absl::InvalidArgumentError("the port must be a number from 0 to 65535");
  }
  address.port = static_cast<uint16_t>(port);
  absl::string_view host = text.substr(0, colon);
  const bool bracketed = absl::ConsumePrefix(&host, "[") && absl::ConsumeSuffix(&host, "]");
  address.ip = host == "localhost" && !bracketed ? "127.0.0.1" : std::string(host);
  in6_addr buffer;
  const bool ip = bracketed ? inet_pton(AF_INET6, address.ip.c_str(), &buffer) == 1
                            : inet_pton(AF_INET, address.ip.c_str(), &buffer) == 1;
  if (!ip) {
    return absl::InvalidArgumentError(
        "the host must be an IPv4 address, an IPv6 address in brackets or localhost");
  }
  return address;
}

}  // namespace baton

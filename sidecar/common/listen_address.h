// ListenAddress: a local server's "host:port", parsed once by the rule every
// listener shares — the host is an IPv4 address, an IPv6 address in
// brackets ("[::1]:4040") or "localhost" (127.0.0.1); the port is 0 to 65535
// (0: the kernel picks one). Configuration validates the flags with it, and
// the HTTP server binds what it returns, so a flag accepted at start-up is one
// the servers can bind.
#ifndef BATON_SIDECAR_COMMON_LISTEN_ADDRESS_H_
#define BATON_SIDECAR_COMMON_LISTEN_ADDRESS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace baton {

struct ListenAddress {
  // An IP address literal without brackets: "127.0.0.1", "::1".
  std::string ip;
  uint16_t port = 0;
};

// InvalidArgument saying what is wrong with `text` ("the host must be ..."),
// for the caller to prefix with where the text came from.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view text);

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_LISTEN_ADDRESS_H_

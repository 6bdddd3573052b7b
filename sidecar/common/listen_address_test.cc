#include "sidecar/common/listen_address.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

TEST(ListenAddressTest, ParsesIpLiteralsAndLocalhost) {
  struct Case {
    std::string text, ip;
    uint16_t port;
  };
  for (const Case& c : {Case{"127.0.0.1:4040", "127.0.0.1", 4040}, Case{"0.0.0.0:0", "0.0.0.0", 0},
                        Case{"localhost:4041", "127.0.0.1", 4041},
                        Case{"[::1]:65535", "::1", 65535}, Case{"[::]:9090", "::", 9090}}) {
    absl::StatusOr<ListenAddress> a = ParseListenAddress(c.text);
    ASSERT_TRUE(a.ok()) << c.text << ": " << a.status();
    EXPECT_EQ(a->ip, c.ip) << c.text;
    EXPECT_EQ(a->port, c.port) << c.text;
  }
}

// Everything a server could not bind is refused here, so start-up
// configuration fails on it (exit 2) instead of the server (exit 1).
TEST(ListenAddressTest, RefusesWhatNoServerCouldBind) {
  for (const char* text : {"foo:4040", "localhost", "4040", ":4040", "127.0.0.1:", "127.0.0.1:x",
                           "127.0.0.1:70000", "127.0.0.1:-1", "127.0.0.1:+80", "::1:4040",
                           "[::1:4040", "[localhost]:4040", "[127.0.0.1]:4040", "256.0.0.1:80"}) {
    EXPECT_FALSE(ParseListenAddress(text).ok()) << text;
  }
  EXPECT_THAT(std::string(ParseListenAddress("foo:4040").status().message()),
              HasSubstr("the host must be"));
  EXPECT_THAT(std::string(ParseListenAddress("127.0.0.1:70000").status().message()),
              HasSubstr("the port must be"));
}

}  // namespace
}  // namespace baton

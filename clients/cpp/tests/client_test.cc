// Client behaviour that needs no sidecar: addresses, and what an absent or
// unresponsive sidecar looks like.
#include "baton/client/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "conformance.h"
#include "gtest/gtest.h"

namespace baton::client {
namespace {

// A loopback TCP socket: listening (accepts, never speaks: a paused
// sidecar) or merely bound (nothing listens: an absent one).
class Socket {
 public:
  explicit Socket(bool listen) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    if (listen) {
      EXPECT_EQ(::listen(fd_, 16), 0);
    }
    addr_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  }
  ~Socket() { close(fd_); }
  const std::string& addr() const { return addr_; }

 private:
  int fd_;
  std::string addr_;
};

std::unique_ptr<Client> MakeClient(const std::string& addr) {
  ClientOptions options;
  options.grpc_addr = addr;
  options.min_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return *std::move(client);
}

TEST(ResolveGrpcAddrTest, ReadsTheEnvironment) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "127.0.0.1:4041"},
      {":5041", "127.0.0.1:5041"},
      {"10.0.0.1:7", "10.0.0.1:7"},
      {"[::1]:4041", "[::1]:4041"},
      {"unix:/run/baton.sock", "unix:/run/baton.sock"},
  };
  for (const auto& [env, want] : cases) {
    setenv("BATON_GRPC_ADDR", env, 1);  // NOLINT(concurrency-mt-unsafe): one thread
    EXPECT_EQ(ResolveGrpcAddr("").value_or("error"), want) << env;
  }
  for (const char* bad : {"4041", "localhost", "127.0.0.1:", "host:99999"}) {
    setenv("BATON_GRPC_ADDR", bad, 1);  // NOLINT(concurrency-mt-unsafe): one thread
    const absl::Status status = ResolveGrpcAddr("").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("BATON_GRPC_ADDR"), absl::string_view::npos) << status;
  }
  EXPECT_EQ(ResolveGrpcAddr(":9").value_or("error"), "127.0.0.1:9");
  unsetenv("BATON_GRPC_ADDR");  // NOLINT(concurrency-mt-unsafe): one thread
}

TEST(ClientTest, AbsentSidecarFailsFastWithAClearError) {
  Socket absent(/*listen=*/false);
  std::unique_ptr<Client> client = MakeClient(absent.addr());
  const auto start = std::chrono::steady_clock::now();
  const absl::StatusOr<int32_t> token = client->RequireLeader(absl::ZeroDuration());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(IsNotLeader(token.status()));
  EXPECT_NE(token.status().message().find(absent.addr()), absl::string_view::npos)
      << token.status();
  EXPECT_EQ(client->GetLeadership().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client->IsLeader().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  conformance::Passed("absent-sidecar");
}

TEST(WatchTest, ReportsAnAbsentSidecarAndKeepsRetrying) {
  Socket absent(/*listen=*/false);
  std::unique_ptr<Client> client = MakeClient(absent.addr());
  std::unique_ptr<Watch> watch = client->Watch();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(watch->Next(absl::Seconds(5)).status().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(client->WaitUntilLeader(absl::Milliseconds(300)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(WatchTest, CancelUnblocksNextOnASidecarThatNeverAnswers) {
  Socket paused(/*listen=*/true);
  std::unique_ptr<Client> client = MakeClient(paused.addr());
  std::unique_ptr<Watch> watch = client->Watch();
  EXPECT_EQ(watch->Next(absl::Milliseconds(200)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  std::thread canceller([&watch] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    watch->Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  const absl::Status cancelled = watch->Next().status();
  EXPECT_EQ(cancelled.code(), absl::StatusCode::kCancelled) << cancelled;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  canceller.join();
}

// The same identities and managers as the Go and Python clients' tests.
TEST(FieldManagerTest, IsTheIdentityOrAValidDistinctStandIn) {
  const struct {
    std::string identity, manager;
  } cases[] = {
      {"web-0_3f9a1c", "web-0_3f9a1c"},
      {std::string(200, 'x') + "_1", std::string(111, 'x') + "-090fac22cfc2b4ad"},
      {"tab\there", "tab_here-778309ed1f28b0f9"},
      {"\xc3\xbc"
       "n\xc3\xaf"
       "code",
       "__n__code-b1b0d40350a25beb"},  // "ünïcode"
      {"", ""},
  };
  for (const auto& c : cases) {
    Leadership l;
    l.identity = c.identity;
    EXPECT_EQ(l.FieldManager(), c.manager) << c.identity;
  }
}

TEST(ClientTest, AnExpectedLeaseNeedsAName) {
  ClientOptions options;
  options.lease_namespace = "ns";
  EXPECT_EQ(Client::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ClientTest, TheExpectedLeaseComesFromTheEnvironment) {
  const std::string name(kLeaseNameEnv), ns(kLeaseNamespaceEnv);
  setenv(ns.c_str(), "ns", 1);  // NOLINT(concurrency-mt-unsafe): one thread
  unsetenv(name.c_str());       // NOLINT(concurrency-mt-unsafe): one thread
  EXPECT_EQ(Client::Create().status().code(), absl::StatusCode::kInvalidArgument)
      << "$" << ns << " without $" << name;
  unsetenv(ns.c_str());  // NOLINT(concurrency-mt-unsafe): one thread
  EXPECT_TRUE(Client::Create().ok());
}

}  // namespace
}  // namespace baton::client

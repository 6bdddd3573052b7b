// api_bench_client: gRPC load against api_bench_server, on grpc++'s callback
// API (no thread per call or stream). Two modes:
//
// --mode=watch (default): opens --watchers WatchLeadership streams spread
//   over --channels connections, waits for every stream's first message,
//   then triggers --handovers handovers through Resign and records, for
//   every stream, the time from publish (the snapshot's acquireTime, set by
//   the bench server just before publishing) to receipt. Prints per-stream
//   latency p50/p99/max over all handovers, and the per-handover "all
//   notified within" (the slowest stream of each handover) p50/max.
//
// --mode=sse: the same with --watchers GET /leader/watch streams (Server-Sent
//   Events) on --http_target, one TCP connection each, read by one epoll
//   thread; the handovers are still triggered through gRPC Resign.
//
// --mode=unary: keeps --concurrency GetLeadership calls in flight over
//   --channels connections for --duration; prints calls/s and latency
//   p50/p99. A lighter load generator than ghz, whose own CPU use caps what
//   it can measure on a 2-core machine.
//
// Output: one line of key=value results.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "baton/v1/leader_election.grpc.pb.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

ABSL_FLAG(std::string, target, "127.0.0.1:4041", "gRPC address of the server");
ABSL_FLAG(int, watchers, 1000, "concurrent WatchLeadership streams");
ABSL_FLAG(int, channels, 8, "connections to spread the streams over");
ABSL_FLAG(int, handovers, 20, "handovers to measure");
ABSL_FLAG(absl::Duration, pause, absl::Milliseconds(200), "pause between handovers");
ABSL_FLAG(std::string, mode, "watch",
          "watch or sse (fan-out latency of WatchLeadership or GET /leader/watch), or unary "
          "(GetLeadership load)");
ABSL_FLAG(std::string, http_target, "127.0.0.1:4040", "sse: HTTP address of the server");
ABSL_FLAG(int, concurrency, 64, "unary: calls in flight");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "unary: how long to run");

namespace baton {
namespace {

using v1::WatchLeadershipResponse;

// Receipt latencies by fencing token, and stream bookkeeping.
class Collector {
 public:
  void Initial() {
    absl::MutexLock lock(&mu_);
    ++initial_;
  }
  void Changed(int32_t token, absl::Duration latency) {
    absl::MutexLock lock(&mu_);
    latencies_[token].push_back(latency);
  }
  void Done() {
    absl::MutexLock lock(&mu_);
    ++done_;
  }
  bool AwaitInitial(int n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return initial_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  }
  // The latencies of every stream for `token`, once all n have it.
  std::vector<absl::Duration> AwaitToken(int32_t token, int n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return static_cast<int>(latencies_[token].size()) >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    return latencies_[token];
  }
  void AwaitDone(int n) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(10));
  }

 private:
  absl::Mutex mu_;
  int initial_ ABSL_GUARDED_BY(mu_) = 0;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int32_t, std::vector<absl::Duration>> latencies_ ABSL_GUARDED_BY(mu_);
};

class Watcher final : public grpc::ClientReadReactor<WatchLeadershipResponse> {
 public:
  Watcher(v1::LeaderElection::Stub* stub, Collector* collector) : collector_(collector) {
    stub->async()->WatchLeadership(&context_, &request_, this);
    StartRead(&message_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    const absl::Time now = absl::Now();
    if (message_.event() == WatchLeadershipResponse::EVENT_INITIAL) {
      collector_->Initial();
    } else if (message_.event() == WatchLeadershipResponse::EVENT_CHANGED) {
      const absl::Time published =
          absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(
              message_.leadership().acquire_time()));
      collector_->Changed(message_.leadership().fencing_token(), now - published);
    }
    StartRead(&message_);
  }
  void OnDone(const grpc::Status&) override { collector_->Done(); }

 private:
  Collector* const collector_;
  grpc::ClientContext context_;
  v1::WatchLeadershipRequest request_;
  WatchLeadershipResponse message_;
};

// --mode=sse: the streams, one non-blocking socket each, read on one epoll
// thread. An event's data line gives the fencing token; its acquireTime (the
// publish time) is parsed once per token.
class SseWatchers {
 public:
  explicit SseWatchers(Collector* collector) : collector_(collector) {}

  // Opens `n` streams on `target` ("ip:port") and starts reading them; false
  // (with a message on stderr) if one cannot be opened.
  bool Open(const std::string& target, int n) {
    const size_t colon = target.rfind(':');
    int port = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(target.substr(colon + 1), &port)) {
      std::fprintf(stderr, "api_bench_client: bad --http_target %s\n", target.c_str());
      return false;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, target.substr(0, colon).c_str(), &addr.sin_addr);
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    const std::string request =
        "GET /leader/watch HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n";
    conns_.resize(n);
    for (int i = 0; i < n; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      conns_[i].fd = fd;
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
          send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
              static_cast<ssize_t>(request.size())) {
        std::fprintf(stderr, "api_bench_client: stream %d could not connect\n", i);
        return false;
      }
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<uint32_t>(i);
      epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    }
    reader_ = std::thread([this] { Read(); });
    return true;
  }

  ~SseWatchers() {
    stop_ = true;
    if (reader_.joinable()) reader_.join();
    for (const Conn& c : conns_) {
      if (c.fd >= 0) close(c.fd);
    }
    if (epoll_ >= 0) close(epoll_);
  }

 private:
  struct Conn {
    int fd = -1;
    bool initial_seen = false;
    std::string pending;  // bytes after the last complete line
  };

  void Read() {
    std::vector<epoll_event> events(256);
    char buffer[16 * 1024];
    while (!stop_) {
      const int ready = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 100);
      for (int e = 0; e < ready; ++e) {
        Conn& c = conns_[events[e].data.u32];
        for (;;) {
          const ssize_t got = recv(c.fd, buffer, sizeof(buffer), 0);
          if (got <= 0) break;
          const absl::Time now = absl::Now();
          c.pending.append(buffer, static_cast<size_t>(got));
          size_t start = 0;
          for (size_t end; (end = c.pending.find('\n', start)) != std::string::npos;
               start = end + 1) {
            OnLine(c, std::string_view(c.pending).substr(start, end - start), now);
          }
          c.pending.erase(0, start);
        }
      }
    }
  }

  void OnLine(Conn& c, std::string_view line, absl::Time now) {
    if (line.substr(0, 6) != "data: ") return;
    if (!c.initial_seen) {
      c.initial_seen = true;
      collector_->Initial();
      return;
    }
    const int32_t token = Number(line, "\"fencingToken\":");
    auto published = published_.find(token);
    if (published == published_.end()) {
      absl::Time at;
      std::string error;
      const std::string_view text = Quoted(line, "\"acquireTime\":\"");
      absl::ParseTime(absl::RFC3339_full, std::string(text), &at, &error);
      published = published_.emplace(token, at).first;
    }
    collector_->Changed(token, now - published->second);
  }

  // The integer after `key`; 0 if absent.
  static int32_t Number(std::string_view line, std::string_view key) {
    const size_t at = line.find(key);
    int32_t value = 0;
    if (at != std::string_view::npos) {
      const std::string_view rest = line.substr(at + key.size());
      const std::string_view digits = rest.substr(0, rest.find_first_of(",}"));
      (void)absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &value);
    }
    return value;
  }

  // The string value after `key` (which ends with the opening quote).
  static std::string_view Quoted(std::string_view line, std::string_view key) {
    const size_t at = line.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = line.substr(at + key.size());
    return rest.substr(0, rest.find('"'));
  }

  Collector* const collector_;
  int epoll_ = -1;
  std::vector<Conn> conns_;
  std::map<int32_t, absl::Time> published_;  // reader thread only
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

absl::Duration Percentile(std::vector<absl::Duration> v, double p) {
  if (v.empty()) return absl::ZeroDuration();
  std::sort(v.begin(), v.end());
  const size_t index =
      std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[index];
}

// One call slot of the unary load: issues GetLeadership, and on completion
// records the latency and issues the next, until `end`.
class UnaryLoop {
 public:
  UnaryLoop(v1::LeaderElection::Stub* stub, absl::Time end, absl::Mutex* mu, int* running)
      : stub_(stub), end_(end), mu_(mu), running_(running) {}

  void Next() {
    context_ = std::make_unique<grpc::ClientContext>();
    started_ = absl::Now();
    stub_->async()->GetLeadership(context_.get(), &request_, &response_,
                                  [this](const grpc::Status& status) { Done(status); });
  }
  const std::vector<absl::Duration>& latencies() const { return latencies_; }
  int errors() const { return errors_; }

 private:
  void Done(const grpc::Status& status) {
    const absl::Time now = absl::Now();
    if (status.ok()) {
      latencies_.push_back(now - started_);
    } else {
      ++errors_;
    }
    if (now < end_) return Next();
    absl::MutexLock lock(mu_);
    --*running_;
  }

  v1::LeaderElection::Stub* const stub_;
  const absl::Time end_;
  absl::Mutex* const mu_;
  int* const running_;
  std::unique_ptr<grpc::ClientContext> context_;
  v1::GetLeadershipRequest request_;
  v1::Leadership response_;
  absl::Time started_;
  std::vector<absl::Duration> latencies_;
  int errors_ = 0;
};

int RunUnary(const std::vector<std::unique_ptr<v1::LeaderElection::Stub>>& stubs) {
  const int n = absl::GetFlag(FLAGS_concurrency);
  absl::Mutex mu;
  int running = n;
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::GetFlag(FLAGS_duration);
  std::vector<std::unique_ptr<UnaryLoop>> loops;
  loops.reserve(n);
  for (int i = 0; i < n; ++i) {
    loops.push_back(std::make_unique<UnaryLoop>(stubs[i % stubs.size()].get(), end, &mu, &running));
  }
  for (auto& loop : loops) loop->Next();
  {
    absl::MutexLock lock(&mu);
    auto finished = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return running == 0; };
    mu.Await(absl::Condition(&finished));
  }
  const absl::Duration elapsed = absl::Now() - start;
  std::vector<absl::Duration> all;
  int errors = 0;
  for (const auto& loop : loops) {
    all.insert(all.end(), loop->latencies().begin(), loop->latencies().end());
    errors += loop->errors();
  }
  std::printf("calls=%zu errors=%d calls_per_s=%.0f p50_ms=%.3f p99_ms=%.3f\n", all.size(), errors,
              static_cast<double>(all.size()) / absl::ToDoubleSeconds(elapsed),
              Ms(Percentile(all, 0.50)), Ms(Percentile(all, 0.99)));
  return errors == 0 ? 0 : 1;
}

int Run() {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::LeaderElection::Stub>> stubs;
  for (int i = 0; i < absl::GetFlag(FLAGS_channels); ++i) {
    grpc::ChannelArguments args;
    args.SetInt("baton.bench.channel", i);  // distinct args: a connection each
    channels.push_back(grpc::CreateCustomChannel(absl::GetFlag(FLAGS_target),
                                                 grpc::InsecureChannelCredentials(), args));
    stubs.push_back(v1::LeaderElection::NewStub(channels.back()));
  }
  if (absl::GetFlag(FLAGS_mode) == "unary") return RunUnary(stubs);

  const int n = absl::GetFlag(FLAGS_watchers);

  Collector collector;
  std::vector<std::unique_ptr<Watcher>> watchers;
  std::unique_ptr<SseWatchers> sse;
  if (absl::GetFlag(FLAGS_mode) == "sse") {
    sse = std::make_unique<SseWatchers>(&collector);
    if (!sse->Open(absl::GetFlag(FLAGS_http_target), n)) return 1;
  } else {
    watchers.reserve(n);
    for (int i = 0; i < n; ++i) {
      watchers.push_back(std::make_unique<Watcher>(stubs[i % stubs.size()].get(), &collector));
    }
  }
  if (!collector.AwaitInitial(n, absl::Seconds(30))) {
    std::fprintf(stderr, "api_bench_client: not every stream got its first message\n");
    return 1;
  }

  std::vector<absl::Duration> all;
  std::vector<absl::Duration> slowest_per_handover;
  int incomplete = 0;
  for (int h = 0; h < absl::GetFlag(FLAGS_handovers); ++h) {
    absl::SleepFor(absl::GetFlag(FLAGS_pause));
    grpc::ClientContext context;
    v1::ResignResponse response;
    grpc::Status status = stubs[0]->Resign(&context, v1::ResignRequest(), &response);
    if (!status.ok()) {
      std::fprintf(stderr, "api_bench_client: Resign: %s\n", status.error_message().c_str());
      return 1;
    }
    const int32_t token = response.leadership().fencing_token();
    std::vector<absl::Duration> got = collector.AwaitToken(token, n, absl::Seconds(10));
    if (static_cast<int>(got.size()) < n) ++incomplete;
    slowest_per_handover.push_back(*std::max_element(got.begin(), got.end()));
    all.insert(all.end(), got.begin(), got.end());
  }

  std::printf(
      "watchers=%d handovers=%zu incomplete=%d stream_p50_ms=%.2f stream_p99_ms=%.2f "
      "stream_max_ms=%.2f all_notified_p50_ms=%.2f all_notified_p99_ms=%.2f "
      "all_notified_max_ms=%.2f\n",
      n, slowest_per_handover.size(), incomplete, Ms(Percentile(all, 0.50)),
      Ms(Percentile(all, 0.99)), Ms(Percentile(all, 1.0)),
      Ms(Percentile(slowest_per_handover, 0.50)), Ms(Percentile(slowest_per_handover, 0.99)),
      Ms(Percentile(slowest_per_handover, 1.0)));

  for (auto& w : watchers) w->Cancel();
  if (!watchers.empty()) collector.AwaitDone(n);
  return incomplete == 0 ? 0 : 1;
}

}  // namespace
}  // namespace baton

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return baton::Run();
}

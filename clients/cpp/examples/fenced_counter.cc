// fenced_counter: fenced writes to a toy store. One writer per sidecar
// address increments a shared counter once a second inside
// Client::RunWhileLeader, so only while its sidecar says it leads, and tags
// every write with the fencing token; the store (a Fence plus a map, in this
// process) refuses stale tokens.
//
//   baton_client_fenced_counter [GRPC_ADDR...]   default: $BATON_GRPC_ADDR or 127.0.0.1:4041
//
// Each write takes a while (300ms here) between RequireLeader and the store,
// as real writes do. Stop the leading sidecar with SIGTERM: its writer is
// told the term ended, finishes the write in hand, returns, and the
// step-down is acknowledged, so the next writer takes over within
// milliseconds with a higher token. The Fence is the safety net for a write
// that outlives its guarantee anyway (a writer paused mid-write, a slow
// store): nothing on the client can stop a write already on its way.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "baton/client/client.h"
#include "baton/client/fence.h"

namespace {

std::atomic<bool> stopping{false};

// The toy store. Its lock covers the fence check and the write together, so
// no stale write can slip in between.
class ToyStore {
 public:
  absl::Status Increment(const std::string& key, int32_t token) {
    absl::MutexLock lock(&mu_);
    if (absl::Status admitted = fence_.Admit(token); !admitted.ok()) return admitted;
    ++data_[key];
    std::printf("store: %s=%d (token %d)\n", key.c_str(), data_[key], token);
    return absl::OkStatus();
  }

 private:
  absl::Mutex mu_;
  baton::client::Fence fence_;
  std::map<std::string, int> data_ ABSL_GUARDED_BY(mu_);
};

void Writer(const std::string& addr, ToyStore& store, const absl::Notification& stop) {
  baton::client::ClientOptions options;
  options.grpc_addr = addr;
  absl::StatusOr<std::unique_ptr<baton::client::Client>> client =
      baton::client::Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return;
  }
  const std::string name = (*client)->addr();
  baton::client::Client& baton = **client;
  // The leader work: runs while this pod leads; `cancelled` is notified when
  // the term ends, and the step-down is acknowledged once this returns.
  auto work = [&](const baton::client::Leadership& term, const absl::Notification& cancelled) {
    std::printf("%s: leading with token %d\n", name.c_str(), term.fencing_token);
    while (!cancelled.HasBeenNotified()) {
      // A fresh answer per write: how long this write may take.
      absl::StatusOr<int32_t> token = baton.RequireLeader(absl::Milliseconds(500));
      if (token.ok()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the write's own work
        absl::Status written = store.Increment("counter", *token);
        if (!written.ok()) {
          std::printf("%s: refused: %s\n", name.c_str(), std::string(written.message()).c_str());
        }
      } else {
        // IsNotLeader: not any more; kUnavailable: no sidecar (act as a follower).
        std::printf("%s: not writing: %s\n", name.c_str(),
                    std::string(token.status().message()).c_str());
      }
      cancelled.WaitForNotificationWithTimeout(absl::Seconds(1));
    }
    std::printf("%s: term with token %d ended: stopped writing\n", name.c_str(),
                term.fencing_token);
    return absl::OkStatus();
  };
  if (absl::Status status = baton.RunWhileLeader(work, stop); !status.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), status.ToString().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // A line at a time, also into a file or a pipe (kubectl logs): who leads
  // and each write are shown as they happen.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::signal(SIGINT, [](int) { stopping = true; });
  std::signal(SIGTERM, [](int) { stopping = true; });
  std::vector<std::string> addrs(argv + 1, argv + argc);
  if (addrs.empty()) addrs.push_back("");  // $BATON_GRPC_ADDR or the default
  ToyStore store;
  absl::Notification stop;  // notified here, not in the signal handler
  std::vector<std::thread> writers;
  writers.reserve(addrs.size());
  for (const std::string& addr : addrs) {
    writers.emplace_back([&addr, &store, &stop] { Writer(addr, store, stop); });
  }
  while (!stopping) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop.Notify();
  for (std::thread& w : writers) w.join();
  return 0;
}

#include "sidecar/api/fanout_workers.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

TEST(FanOutWorkersTest, CallsEveryIndexExactlyOnce) {
  FanOutWorkers workers(3, 1);
  for (size_t n : {0u, 1u, 2u, 1000u}) {
    std::vector<std::atomic<int>> calls(n);
    workers.Run(n, [&](size_t i) { calls[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(calls[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(FanOutWorkersTest, LargeBatchesRunOnAtMostTheGivenThreads) {
  FanOutWorkers workers(2, 8);
  absl::Mutex mu;
  std::set<std::thread::id> threads;
  workers.Run(10'000, [&](size_t) {
    absl::MutexLock lock(&mu);
    threads.insert(std::this_thread::get_id());
  });
  // Either may find nothing left to do: the helper if the caller was quick,
  // the caller if it was descheduled after waking the helper.
  EXPECT_GE(threads.size(), 1u);
  EXPECT_LE(threads.size(), 2u);
}

TEST(FanOutWorkersTest, SmallBatchesStayOnTheCaller) {
  FanOutWorkers workers(4, 64);
  std::set<std::thread::id> threads;
  workers.Run(63, [&](size_t) { threads.insert(std::this_thread::get_id()); });
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(FanOutWorkersTest, ConcurrentRunsAreSerialized) {
  FanOutWorkers workers(2, 1);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  callers.reserve(4);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        workers.Run(100, [&](size_t) { total.fetch_add(1); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 100);
}

}  // namespace
}  // namespace baton

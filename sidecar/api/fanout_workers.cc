#include "sidecar/api/fanout_workers.h"

namespace baton {

FanOutWorkers::FanOutWorkers(int threads, size_t min_parallel) : min_parallel_(min_parallel) {
  for (int i = 1; i < threads; ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

FanOutWorkers::~FanOutWorkers() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : helpers_) t.join();
}

void FanOutWorkers::Run(size_t n, absl::FunctionRef<void(size_t)> fn) {
  absl::MutexLock run(&run_mu_);
  if (helpers_.empty() || n < min_parallel_) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    fn_ = &fn;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    busy_helpers_ = static_cast<int>(helpers_.size());
    ++generation_;
  }
  Work();
  absl::MutexLock lock(&mu_);
  auto helpers_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return busy_helpers_ == 0; };
  mu_.Await(absl::Condition(&helpers_done));
  fn_ = nullptr;
}

void FanOutWorkers::Work() {
  const absl::FunctionRef<void(size_t)>* fn;
  size_t n;
  {
    absl::MutexLock lock(&mu_);
    fn = fn_;
    n = n_;
  }
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    (*fn)(i);
  }
}

void FanOutWorkers::HelperLoop() {
  uint64_t seen = 0;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto woken = [&]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || generation_ != seen; };
      mu_.Await(absl::Condition(&woken));
      if (stop_) return;
      seen = generation_;
    }
    Work();
    absl::MutexLock lock(&mu_);
    --busy_helpers_;
  }
}

}  // namespace baton

// FanOutWorkers: runs one batch of independent calls on the calling thread
// plus a fixed set of helper threads, and returns when every call has
// returned. The gRPC watch fan-out uses it to start a thousand stream writes
// in parallel: each write costs microseconds of transport work, and spread
// over several threads that hit the same connections, grpc++ also coalesces
// the queued writes into fewer socket writes.
//
// Thread-safe: Run may be called from any thread; concurrent Runs are
// serialized. Helper threads live as long as the object and sleep between
// batches.
#ifndef BATON_SIDECAR_API_FANOUT_WORKERS_H_
#define BATON_SIDECAR_API_FANOUT_WORKERS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace baton {

class FanOutWorkers {
 public:
  // `threads` counts the caller: 1 (or less) runs everything on the caller.
  // Batches smaller than `min_parallel` also run on the caller alone, since
  // waking a helper costs more than a few calls.
  FanOutWorkers(int threads, size_t min_parallel);
  // Joins the helpers. No Run may be in progress.
  ~FanOutWorkers();

  FanOutWorkers(const FanOutWorkers&) = delete;
  FanOutWorkers& operator=(const FanOutWorkers&) = delete;

  // Calls fn(i) once for every i in [0, n), on the caller and the helpers,
  // in no particular order; returns after the last call returned. `fn` must
  // be safe to call concurrently for different i.
  void Run(size_t n, absl::FunctionRef<void(size_t)> fn);

 private:
  void HelperLoop();
  void Work();

  const size_t min_parallel_;
  absl::Mutex run_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one batch at a time
  absl::Mutex mu_;
  const absl::FunctionRef<void(size_t)>* fn_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t n_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int busy_helpers_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // The next index to hand out in the current batch.
  std::atomic<size_t> next_{0};
  std::vector<std::thread> helpers_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_FANOUT_WORKERS_H_

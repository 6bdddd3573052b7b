// WatchRefresher: the thread that keeps one server's watch streams current
// (WatchStreams::Refresh). It runs the owner's refresh function
//  * when the published leadership changes (it subscribes to the
//    LeadershipPublisher; the subscription callback only sets a flag, so the
//    election loop is never held up by a fan-out),
//  * when the current leadership guarantee runs out, since is_leader turns
//    false then with no publish at all,
//  * when the refresh function asks to run again (a heartbeat is due),
//  * and at least every `interval` (which is how streams that watch the
//    daemon's hooks, not the snapshot, notice a change).
// Each run looks at the state at that moment and sends every stream what it
// is owed. The thread waits on the context's wait_clock.
//
// Start at most once, then Stop (idempotent), from any thread but not
// concurrently with each other.
#ifndef BATON_SIDECAR_API_WATCH_REFRESHER_H_
#define BATON_SIDECAR_API_WATCH_REFRESHER_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/api/api_context.h"

namespace baton {

class WatchRefresher {
 public:
  // Sends every stream what it is owed now; returns how long until it wants
  // to run again (InfiniteDuration: no wish of its own). Must not block.
  using Refresh = std::function<absl::Duration()>;

  // `context` must outlive the refresher.
  WatchRefresher(const ApiContext* context, absl::Duration interval, Refresh refresh);
  // Stop().
  ~WatchRefresher();

  WatchRefresher(const WatchRefresher&) = delete;
  WatchRefresher& operator=(const WatchRefresher&) = delete;

  // Subscribes to the publisher and starts the thread, which refreshes at
  // once.
  void Start();

  // Unsubscribes and joins the thread: once it returns, the refresh function
  // is not running and is not called again. Idempotent.
  void Stop();

 private:
  void Loop();
  // Refresh, then how long the thread may sleep before the next one is due.
  absl::Duration RunOnce();

  const ApiContext* const context_;
  const absl::Duration interval_;
  const Refresh refresh_;
  int subscription_ = 0;
  std::thread thread_;

  absl::Mutex mu_;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace baton

#endif  // BATON_SIDECAR_API_WATCH_REFRESHER_H_

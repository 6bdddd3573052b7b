#include "sidecar/election/leadership.h"

#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace baton {

LeadershipPublisher::LeadershipPublisher(Leadership initial)
    : current_{std::move(initial), 1} {}

void LeadershipPublisher::Publish(const Leadership& next) {
  absl::MutexLock notify(&notify_mu_);
  notifying_thread_ = std::this_thread::get_id();
  Versioned snapshot;
  std::vector<std::shared_ptr<Callback>> to_call;
  {
    absl::MutexLock lock(&mu_);
    if (current_.leadership == next) {
      notifying_thread_ = std::thread::id();
      return;
    }
    current_.leadership = next;
    ++current_.version;
    snapshot = current_;
    to_call.reserve(subscribers_.size());
    for (const auto& [id, cb] : subscribers_) to_call.push_back(cb);
  }
  for (const auto& cb : to_call) (*cb)(snapshot);
  notifying_thread_ = std::thread::id();
}

LeadershipPublisher::Versioned LeadershipPublisher::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

LeadershipPublisher::Versioned LeadershipPublisher::WaitForChange(uint64_t after,
                                                                  absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, after]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return current_.version > after;
  };
  mu_.AwaitWithDeadline(absl::Condition(&changed), deadline);
  return current_;
}

int LeadershipPublisher::Subscribe(Callback cb) {
  absl::MutexLock lock(&mu_);
  int id = next_id_++;
  subscribers_.emplace(id, std::make_shared<Callback>(std::move(cb)));
  return id;
}

void LeadershipPublisher::Unsubscribe(int id) {
  // From inside a callback this thread already holds notify_mu_: just drop the
  // entry. From any other thread, taking notify_mu_ waits out a notification
  // in flight, so the callback is not running when we return.
  if (notifying_thread_ == std::this_thread::get_id()) {
    absl::MutexLock lock(&mu_);
    subscribers_.erase(id);
    return;
  }
  absl::MutexLock notify(&notify_mu_);
  absl::MutexLock lock(&mu_);
  subscribers_.erase(id);
}

}  // namespace baton

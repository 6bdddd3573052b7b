#include "sidecar/api/watch_refresher.h"

#include <algorithm>
#include <utility>

namespace baton {

WatchRefresher::WatchRefresher(const ApiContext* context, absl::Duration interval, Refresh refresh)
    : context_(context), interval_(interval), refresh_(std::move(refresh)) {}

WatchRefresher::~WatchRefresher() { Stop(); }

void WatchRefresher::Start() {
  subscription_ = context_->publisher->Subscribe([this](const LeadershipPublisher::Versioned&) {
    absl::MutexLock lock(&mu_);
    wake_ = true;
  });
  thread_ = std::thread([this] { Loop(); });
}

absl::Duration WatchRefresher::RunOnce() {
  const absl::Duration asked = refresh_();
  // Wake when the current guarantee runs out: is_leader turns false then
  // with no publish at all.
  const Leadership snapshot = context_->publisher->Current().leadership;
  const MonoTime now = context_->clock->Monotonic();
  const absl::Duration guarantee_left =
      snapshot.IsLeader(now) ? snapshot.leader_until - now : absl::InfiniteDuration();
  return std::min({interval_, asked, guarantee_left});
}

void WatchRefresher::Loop() {
  for (;;) {
    const absl::Duration wait = RunOnce();
    const Clock& clock = *context_->wait_clock;
    const MonoTime until = clock.Monotonic() + wait;
    absl::MutexLock lock(&mu_);
    auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wake_ || stop_; };
    clock.AwaitUntil(&mu_, absl::Condition(&woken), until);
    if (stop_) return;
    wake_ = false;
  }
}

void WatchRefresher::Stop() {
  if (!thread_.joinable()) return;
  context_->publisher->Unsubscribe(subscription_);
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

}  // namespace baton

#include "sidecar/election/election_loop.h"

#include <algorithm>
#include <utility>

namespace baton {

ElectionLoop::ElectionLoop(Elector* elector, LeadershipPublisher* publisher)
    : elector_(elector), clock_(elector->clock()), publisher_(publisher) {}

ElectionLoop::~ElectionLoop() {
  Shutdown(absl::ZeroDuration());
  if (thread_.joinable()) thread_.join();
}

void ElectionLoop::Start() {
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
    health_.next_step = clock_->Monotonic();
  }
  thread_ = std::thread(&ElectionLoop::Run, this);
}

void ElectionLoop::Observe(std::optional<LeaseRecord> record) {
  absl::MutexLock lock(&mu_);
  observation_ = std::move(record);
}

void ElectionLoop::SetWatchAvailable(bool available) {
  absl::MutexLock lock(&mu_);
  watch_available_ = available;
}

bool ElectionLoop::Resign(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!started_ || finished_ || stop_deadline_) return false;
  const uint64_t id = ++resigns_requested_;
  auto stepped_down = [this, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return resigns_stepped_down_ >= id || finished_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&stepped_down), timeout);
  return resigns_stepped_down_ >= id;
}

bool ElectionLoop::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return true;
    if (!stop_deadline_) stop_deadline_ = clock_->Monotonic() + grace;
    mu_.AwaitWithTimeout(absl::Condition(&finished_), grace);
    if (!finished_) return false;
  }
  if (thread_.joinable()) thread_.join();
  return true;
}

ElectionHealth ElectionLoop::Health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void ElectionLoop::Run() {
  MonoTime wake = clock_->Monotonic();
  for (;;) {
    const Work work = WaitForWork(wake);
    if (work.watch_available) wake = elector_->SetWatchAvailable(*work.watch_available);
    if (work.observation) wake = elector_->Observe(*work.observation);
    if (work.stop_deadline) {
      elector_->BeginStepDown();
      Publish();
      // Past the grace period the process is about to be killed anyway; a
      // release that cannot finish in time only delays the exit.
      if (clock_->Monotonic() < *work.stop_deadline) {
        elector_->Release();
        Publish();
      }
      absl::MutexLock lock(&mu_);
      finished_ = true;
      return;
    }
    if (work.resign_requests > 0) {
      elector_->BeginStepDown();
      Publish();
      {
        absl::MutexLock lock(&mu_);
        resigns_stepped_down_ = work.resign_requests;
      }
      wake = elector_->Resign();
      Publish();
      continue;
    }
    if (clock_->Monotonic() >= wake) wake = elector_->Step();
    Publish();
  }
}

ElectionLoop::Work ElectionLoop::WaitForWork(MonoTime wake) {
  // The retry period bounds each wait: see "Waiting" in the header.
  const absl::Duration max_wait = elector_->options().retry_period;
  absl::MutexLock lock(&mu_);
  for (;;) {
    if (HasWorkLocked()) break;
    const MonoTime now = clock_->Monotonic();
    if (now >= wake) break;
    mu_.AwaitWithTimeout(absl::Condition(this, &ElectionLoop::HasWorkLocked),
                         std::min(wake - now, max_wait));
  }
  Work work;
  work.observation = std::exchange(observation_, std::nullopt);
  work.watch_available = std::exchange(watch_available_, std::nullopt);
  if (resigns_requested_ > resigns_taken_)
    work.resign_requests = resigns_taken_ = resigns_requested_;
  work.stop_deadline = stop_deadline_;
  return work;
}

bool ElectionLoop::HasWorkLocked() const {
  return observation_ || watch_available_ || resigns_requested_ > resigns_taken_ || stop_deadline_;
}

void ElectionLoop::Publish() {
  publisher_->Publish(elector_->Snapshot());
  const ElectionHealth health = elector_->Health();
  absl::MutexLock lock(&mu_);
  health_ = health;
}

}  // namespace baton

#include "sidecar/election/election_loop.h"

#include <algorithm>
#include <utility>

#include "sidecar/common/log.h"

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

void ElectionLoop::Observe(LeaseEvent event) {
  absl::MutexLock lock(&mu_);
  observation_ = std::move(event);
}

void ElectionLoop::SetWatchAvailable(bool available) {
  absl::MutexLock lock(&mu_);
  watch_available_ = available;
}

bool ElectionLoop::Resign() {
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || finished_ || stop_deadline_) return false;
  }
  // First the publisher, so that no answer says leader from here on, even if
  // a takeover is in flight; then the loop, which ends the request when the
  // release is done.
  const uint64_t request = publisher_->StepDown();
  absl::MutexLock lock(&mu_);
  resign_requested_ = request;
  return true;
}

void ElectionLoop::PromisesChanged() {
  absl::MutexLock lock(&mu_);
  promises_changed_ = true;
}

bool ElectionLoop::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (!started_) return true;
  }
  // As in Resign: the publisher first, so that by the time the loop weighs
  // the promises no new one can be given.
  publisher_->StepDown();
  {
    absl::MutexLock lock(&mu_);
    if (!stop_deadline_) stop_deadline_ = clock_->Monotonic() + grace;
    clock_->AwaitUntil(&mu_, absl::Condition(&finished_), *stop_deadline_);
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
  std::optional<StepDown> step_down;
  // The newest Resign's step-down request, ended once its release is done.
  uint64_t resign_request = 0;
  std::optional<MonoTime> stop_deadline;
  for (;;) {
    const Work work = WaitForWork(wake);
    if (work.watch_available) wake = elector_->SetWatchAvailable(*work.watch_available);
    if (work.observation) wake = elector_->Observe(*work.observation);
    if (work.stop_deadline) stop_deadline = work.stop_deadline;
    if (work.resign) resign_request = std::max(resign_request, *work.resign);
    if ((work.resign || stop_deadline) && !step_down) {
      // The publisher already tells nobody this pod leads (Resign, Shutdown).
      const Leadership before = elector_->Snapshot();
      step_down = StepDown{before.fencing_token, before.holding};
    }
    if (!step_down) {
      if (clock_->Monotonic() >= wake) wake = elector_->Step();
      Publish();
      continue;
    }

    // Step 2 of the handshake: the promises of the term, then the release.
    const MonoTime now = clock_->Monotonic();
    const MonoTime settled = SettledAt(*step_down, now);
    if (stop_deadline && now >= *stop_deadline) {
      // Past the grace period the process is about to be killed anyway: a
      // release now could not finish in time, and with promises outstanding
      // it must not happen at all.
      spdlog::warn(
          "event=release_skipped reason=shutdown_grace_passed promises_outstanding_for={} "
          "next=\"exit; the Lease expires on its own, after every promise\"",
          absl::FormatDuration(std::max(absl::ZeroDuration(), settled - now)));
      break;
    }
    if (settled > now) {
      Publish();  // what the watch told the elector meanwhile
      wake = stop_deadline ? std::min(settled, *stop_deadline) : settled;
      continue;
    }
    if (stop_deadline) {
      elector_->Release();
      Publish();
      break;
    }
    wake = elector_->Resign();
    publisher_->EndStepDown(resign_request);
    step_down.reset();
    Publish();
  }
  absl::MutexLock lock(&mu_);
  finished_ = true;
}

MonoTime ElectionLoop::SettledAt(const StepDown& step_down, MonoTime now) const {
  if (!step_down.holding) return now;
  return publisher_->OutstandingUntil(step_down.token, now).value_or(now);
}

ElectionLoop::Work ElectionLoop::WaitForWork(MonoTime wake) {
  absl::MutexLock lock(&mu_);
  clock_->AwaitUntil(&mu_, absl::Condition(this, &ElectionLoop::HasWorkLocked), wake);
  Work work;
  work.observation = std::exchange(observation_, std::nullopt);
  work.watch_available = std::exchange(watch_available_, std::nullopt);
  work.resign = std::exchange(resign_requested_, std::nullopt);
  promises_changed_ = false;
  work.stop_deadline = stop_deadline_;
  if (stop_deadline_) stop_deadline_reported_ = true;
  return work;
}

bool ElectionLoop::HasWorkLocked() const {
  return observation_ || watch_available_ || resign_requested_.has_value() || promises_changed_ ||
         (stop_deadline_ && !stop_deadline_reported_);
}

void ElectionLoop::Publish() {
  publisher_->Publish(elector_->Snapshot());
  const ElectionHealth health = elector_->Health();
  absl::MutexLock lock(&mu_);
  health_ = health;
}

}  // namespace baton

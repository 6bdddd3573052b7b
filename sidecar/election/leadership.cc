#include "sidecar/election/leadership.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace baton {

LeadershipPublisher::LeadershipPublisher(Leadership initial) : current_{std::move(initial), 1} {}

void LeadershipPublisher::Publish(const Leadership& next) {
  Change([&next](Leadership* l) { *l = next; });
}

uint64_t LeadershipPublisher::StepDown() {
  uint64_t request = 0;
  {
    absl::MutexLock lock(&mu_);
    request = ++step_downs_requested_;
  }
  Change([](Leadership*) {});  // marks the current snapshot
  return request;
}

void LeadershipPublisher::EndStepDown(uint64_t request) {
  absl::MutexLock lock(&mu_);
  step_downs_ended_ = std::max(step_downs_ended_, request);
}

void LeadershipPublisher::Change(const std::function<void(Leadership*)>& edit) {
  absl::MutexLock notify(&notify_mu_);
  Versioned snapshot;
  std::vector<std::shared_ptr<Callback>> to_call;
  {
    absl::MutexLock lock(&mu_);
    Leadership next = current_.leadership;
    edit(&next);
    if (!ReplaceLocked(std::move(next), &to_call)) return;
    snapshot = current_;
  }
  notifying_thread_ = std::this_thread::get_id();
  for (const auto& cb : to_call) (*cb)(snapshot);
  notifying_thread_ = std::thread::id();
}

bool LeadershipPublisher::ReplaceLocked(Leadership next,
                                        std::vector<std::shared_ptr<Callback>>* to_call) {
  if (step_downs_requested_ > step_downs_ended_) next.stepping_down = true;
  if (next.holding && ledger_.token != next.fencing_token) {
    // A new term. Promises of the previous one may still run (this sidecar
    // can start a term while its last one's answers are out, e.g. when it
    // recreates a deleted Lease): they stay outstanding, now as anonymous
    // ones, since an acknowledgement names the term it ends.
    std::optional<MonoTime> carried = ledger_.anonymous_until;
    for (const auto& [client, until] : ledger_.by_client) {
      carried = std::max(carried.value_or(until), until);
    }
    ledger_ = Ledger();
    ledger_.token = next.fencing_token;
    ledger_.anonymous_until = carried;
  }
  if (current_.leadership == next) return false;
  current_.leadership = std::move(next);
  ++current_.version;
  to_call->reserve(subscribers_.size());
  for (const auto& [id, cb] : subscribers_) to_call->push_back(cb);
  return true;
}

LeaderAnswer LeadershipPublisher::Promise(std::string_view client_id, MonoTime now,
                                          MonoTime at_most) {
  absl::MutexLock lock(&mu_);
  LeaderAnswer answer(current_.leadership, current_.version, now);
  Leadership& l = answer.leadership_;
  if (!l.IsLeader(now)) return answer;
  // A bound shortens only what a leader answer promises.
  l.leader_until = std::min(l.leader_until, at_most);
  if (!l.IsLeader(now)) return answer;
  // ReplaceLocked keeps the ledger on the current term whenever it holds.
  if (!client_id.empty() && TrackLocked(client_id, l.leader_until, now)) return answer;
  ledger_.anonymous_until =
      std::max(ledger_.anonymous_until.value_or(l.leader_until), l.leader_until);
  return answer;
}

bool LeadershipPublisher::TrackLocked(std::string_view client_id, MonoTime until, MonoTime now) {
  const absl::string_view key(client_id.data(), client_id.size());
  if (auto named = ledger_.by_client.find(key); named != ledger_.by_client.end()) {
    named->second = std::max(named->second, until);
    return true;
  }
  const size_t limit = static_cast<size_t>(kMaxTrackedClients);
  if (ledger_.by_client.size() >= limit) DropLapsedLocked(now);
  if (ledger_.by_client.size() >= limit) return false;
  if (ledger_.by_client.empty() || until < ledger_.first_end) ledger_.first_end = until;
  ledger_.by_client.emplace(std::string(client_id), until);
  return true;
}

void LeadershipPublisher::DropLapsedLocked(MonoTime now) {
  // Entries only ever move their end later, so first_end stays a lower bound
  // between sweeps; a sweep that frees nothing makes it exact again, and the
  // next one waits until that instant has passed.
  if (now < ledger_.first_end) return;
  std::optional<MonoTime> first_end;
  for (auto it = ledger_.by_client.begin(); it != ledger_.by_client.end();) {
    if (it->second <= now) {
      ledger_.by_client.erase(it++);
      continue;
    }
    first_end = std::min(first_end.value_or(it->second), it->second);
    ++it;
  }
  if (first_end) ledger_.first_end = *first_end;
}

namespace {

// `t` as answers carry it: LeadershipToProto prints valid_until_boottime in
// whole nanoseconds, truncated, so an acknowledgement naming a deadline names
// it at that resolution.
MonoTime AsAnswered(MonoTime t) {
  return MonoTime::FromSinceOrigin(absl::Trunc(t.SinceOrigin(), absl::Nanoseconds(1)));
}

}  // namespace

void LeadershipPublisher::VoidPromises() {
  absl::MutexLock lock(&mu_);
  ledger_.anonymous_until.reset();
  ledger_.by_client.clear();
}

bool LeadershipPublisher::Acknowledge(const Acknowledgement& ack, MonoTime now) {
  absl::MutexLock lock(&mu_);
  if (ledger_.token != ack.fencing_token) return false;
  auto it = ledger_.by_client.find(absl::string_view(ack.client_id.data(), ack.client_id.size()));
  if (it == ledger_.by_client.end()) return false;
  // The entry is the reader's latest promise; any earlier one ends before it
  // and so is covered whenever this one is.
  if (ack.up_to && AsAnswered(it->second) > *ack.up_to) return false;
  const bool outstanding = it->second > now;
  ledger_.by_client.erase(it);
  return outstanding;
}

int LeadershipPublisher::TrackedClients() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(ledger_.by_client.size());
}

std::optional<MonoTime> LeadershipPublisher::OutstandingUntil(int64_t token, MonoTime now) const {
  absl::MutexLock lock(&mu_);
  if (ledger_.token != token) return std::nullopt;
  std::optional<MonoTime> until;
  auto consider = [&](MonoTime t) {
    if (t > now && (!until || t > *until)) until = t;
  };
  if (ledger_.anonymous_until) consider(*ledger_.anonymous_until);
  for (const auto& [client, t] : ledger_.by_client) consider(t);
  return until;
}

LeadershipPublisher::Versioned LeadershipPublisher::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

LeadershipPublisher::Versioned LeadershipPublisher::WaitForChange(uint64_t after, MonoTime deadline,
                                                                  const Clock& clock) const {
  absl::MutexLock lock(&mu_);
  auto changed = [this, after]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return current_.version > after; };
  clock.AwaitUntil(&mu_, absl::Condition(&changed), deadline);
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

#include "sidecar/election/fake_lease_store.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace baton {

absl::StatusOr<LeaseRecord> FakeLeaseStore::Get() {
  absl::MutexLock lock(&mu_);
  if (auto failure = BeginCallLocked(Verb::kGet)) return *failure;
  if (!lease_) return absl::NotFoundError("lease not found");
  return *lease_;
}

absl::StatusOr<LeaseRecord> FakeLeaseStore::Create(const LeaseRecord& record) {
  return Write(Verb::kCreate, record);
}

absl::StatusOr<LeaseRecord> FakeLeaseStore::Update(const LeaseRecord& record) {
  return Write(Verb::kUpdate, record);
}

absl::StatusOr<LeaseRecord> FakeLeaseStore::Write(Verb verb, const LeaseRecord& record) {
  absl::MutexLock order(&watch_mu_);
  LeaseRecord stored;
  std::optional<absl::Status> reported;
  {
    absl::MutexLock lock(&mu_);
    if (auto failure = BeginCallLocked(verb)) return *failure;
    LeaseRecord next = record;
    if (verb == Verb::kCreate) {
      if (lease_) return absl::AlreadyExistsError("lease already exists");
      next.uid.clear();
    } else {
      if (!lease_) return absl::NotFoundError("lease not found");
      if (record.resource_version != lease_->resource_version) {
        return absl::AbortedError(absl::StrCat("conflict: resourceVersion ",
                                               record.resource_version, " is stale, current is ",
                                               lease_->resource_version));
      }
      next.uid = lease_->uid;
    }
    stored = StoreLocked(std::move(next));
    reported = std::exchange(land_but_fail_, std::nullopt);
  }
  NotifyLocked(LeaseEvent{stored, stored.resource_version});
  if (reported) return *reported;
  return stored;
}

void FakeLeaseStore::FailNextCalls(int n, absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_remaining_ = n;
  fail_status_ = std::move(status);
}

void FakeLeaseStore::LandNextWriteButFail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  land_but_fail_ = std::move(status);
}

LeaseRecord FakeLeaseStore::Set(const LeaseRecord& record) {
  absl::MutexLock order(&watch_mu_);
  LeaseRecord stored;
  {
    absl::MutexLock lock(&mu_);
    LeaseRecord next = record;
    next.uid = lease_ ? lease_->uid : "";
    stored = StoreLocked(std::move(next));
  }
  NotifyLocked(LeaseEvent{stored, stored.resource_version});
  return stored;
}

std::string FakeLeaseStore::Delete() {
  absl::MutexLock order(&watch_mu_);
  std::string rv;
  {
    absl::MutexLock lock(&mu_);
    if (!lease_) return rv;
    lease_.reset();
    rv = absl::StrCat(++last_resource_version_);
  }
  NotifyLocked(LeaseEvent{std::nullopt, rv});
  return rv;
}

std::optional<LeaseRecord> FakeLeaseStore::Current() const {
  absl::MutexLock lock(&mu_);
  return lease_;
}

int FakeLeaseStore::Calls(Verb verb) const {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(verb);
  return it == calls_.end() ? 0 : it->second;
}

int FakeLeaseStore::TotalCalls() const {
  absl::MutexLock lock(&mu_);
  int total = 0;
  for (const auto& [verb, n] : calls_) total += n;
  return total;
}

void FakeLeaseStore::ClearCalls() {
  absl::MutexLock lock(&mu_);
  calls_.clear();
}

void FakeLeaseStore::SetWatcher(Watcher watcher) {
  absl::MutexLock lock(&watch_mu_);
  watcher_ = std::move(watcher);
}

LeaseRecord FakeLeaseStore::StoreLocked(LeaseRecord record) {
  record.resource_version = absl::StrCat(++last_resource_version_);
  if (record.uid.empty()) record.uid = absl::StrCat("uid-", ++last_uid_);
  lease_ = std::move(record);
  return *lease_;
}

std::optional<absl::Status> FakeLeaseStore::BeginCallLocked(Verb verb) {
  ++calls_[verb];
  if (fail_remaining_ == 0) return std::nullopt;
  --fail_remaining_;
  return fail_status_;
}

void FakeLeaseStore::NotifyLocked(const LeaseEvent& event) {
  // Runs the watcher under watch_mu_ (but not mu_): this is a test fake, and
  // in-order delivery matters more here than the no-callback-under-lock rule.
  if (watcher_) watcher_(event);
}

}  // namespace baton

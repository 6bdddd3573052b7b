// FakeLeaseStore: an in-memory LeaseStore for tests, with the API server's
// optimistic-concurrency semantics and hooks to inject the faults a real one
// produces.
//
// Semantics match LeaseStore's status table: every change gets a new, strictly
// increasing resourceVersion; Update with a stale one is Aborted (409);
// Create of an existing Lease is AlreadyExists; Get/Update of a missing one is
// NotFound. A Lease created after a delete gets a new uid.
//
// Thread-safe: any method may be called from any thread. The watcher (see
// SetWatcher) runs on the thread that made the change and sees changes in
// order, like a real watch; it may read the store (Get, Current) but must not
// change it.
#ifndef BATON_SIDECAR_ELECTION_FAKE_LEASE_STORE_H_
#define BATON_SIDECAR_ELECTION_FAKE_LEASE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sidecar/election/lease_record.h"
#include "sidecar/election/lease_store.h"

namespace baton {

class FakeLeaseStore final : public LeaseStore {
 public:
  enum class Verb { kGet, kCreate, kUpdate };
  // Receives the stored Lease after every change; nullopt when deleted.
  using Watcher = std::function<void(const LeaseEvent&)>;

  FakeLeaseStore() = default;

  absl::StatusOr<LeaseRecord> Get() override;
  absl::StatusOr<LeaseRecord> Create(const LeaseRecord& record) override;
  absl::StatusOr<LeaseRecord> Update(const LeaseRecord& record) override;

  // --- Fault injection -----------------------------------------------------

  // The next `n` calls (any verb) fail with `status` and change nothing.
  void FailNextCalls(int n, absl::Status status);
  // The next Create or Update that would succeed is applied, but the caller
  // gets `status` instead of the result: a request that reached the server
  // and whose answer was lost.
  void LandNextWriteButFail(absl::Status status);

  // --- Another writer ------------------------------------------------------

  // Stores `record`'s election fields as a different client would: creates the
  // Lease if absent, replaces it unconditionally otherwise (resource_version
  // and uid of `record` are ignored). Returns the stored record.
  LeaseRecord Set(const LeaseRecord& record);
  // Deletes the Lease if it exists; returns the deletion's resourceVersion
  // (empty if there was nothing to delete), as a watch would report it.
  std::string Delete();

  // --- Inspection ----------------------------------------------------------

  // The stored Lease, without counting as a call.
  std::optional<LeaseRecord> Current() const;
  // Calls made through the LeaseStore interface, per verb (failed ones too).
  int Calls(Verb verb) const;
  int TotalCalls() const;
  // Counts calls from zero again.
  void ClearCalls();

  // Installs a stand-in for a watch, replacing any previous one. When this
  // returns, the previous watcher is not running and will not run again.
  void SetWatcher(Watcher watcher) ABSL_LOCKS_EXCLUDED(watch_mu_);

 private:
  // Create (kCreate) or Update (kUpdate), as the API server checks them: the
  // write lands, its watch event is delivered, and then any failure injected
  // by LandNextWriteButFail is returned.
  absl::StatusOr<LeaseRecord> Write(Verb verb, const LeaseRecord& record)
      ABSL_LOCKS_EXCLUDED(watch_mu_, mu_);
  // Stores `record`, assigning a new resourceVersion (and a uid if created),
  // and returns what was stored.
  LeaseRecord StoreLocked(LeaseRecord record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a call and returns the injected failure for it, if any.
  std::optional<absl::Status> BeginCallLocked(Verb verb) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Delivers `lease` to the watcher, if one is installed.
  void NotifyLocked(const LeaseEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(watch_mu_)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Held by every change from before it is applied until the watcher has seen
  // it, so the watcher sees changes in the order they were made.
  absl::Mutex watch_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Watcher watcher_ ABSL_GUARDED_BY(watch_mu_);
  mutable absl::Mutex mu_;
  std::optional<LeaseRecord> lease_ ABSL_GUARDED_BY(mu_);
  int64_t last_resource_version_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_uid_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<Verb, int> calls_ ABSL_GUARDED_BY(mu_);
  int fail_remaining_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status fail_status_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> land_but_fail_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_FAKE_LEASE_STORE_H_

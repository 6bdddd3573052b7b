// LeaseStore: where the election engine reads and writes its one Lease.
//
// The engine depends only on this interface. The daemon uses the Kubernetes
// implementation (sidecar/kube/kube_lease_store.h); tests use an in-memory one
// with the same resourceVersion semantics (fake_lease_store.h).
//
// Calls are synchronous and bounded by the implementation's request deadline.
// A store is bound to one Lease (namespace and name) at construction.
#ifndef BATON_SIDECAR_ELECTION_LEASE_STORE_H_
#define BATON_SIDECAR_ELECTION_LEASE_STORE_H_

#include "absl/status/statusor.h"
#include "sidecar/election/lease_record.h"

namespace baton {

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  // Reads the Lease. NotFound if it does not exist.
  virtual absl::StatusOr<LeaseRecord> Get() = 0;

  // Creates the Lease from `record` (resource_version and uid ignored).
  // Returns the stored record with its new resource_version and uid.
  // AlreadyExists if someone created it first.
  virtual absl::StatusOr<LeaseRecord> Create(const LeaseRecord& record) = 0;

  // Replaces the Lease's election fields with `record`'s, conditional on
  // `record.resource_version` still being current; all other fields of the
  // stored object are preserved. Returns the stored record.
  // Aborted (HTTP 409 Conflict) if the Lease changed since that version,
  // and also if it was deleted (Leases allow create-on-update, so the API
  // server answers Conflict); a following Get then says NotFound.
  virtual absl::StatusOr<LeaseRecord> Update(const LeaseRecord& record) = 0;
};

// Status codes every LeaseStore (and the kube client behind it) uses, so the
// engine can tell "someone else won" from "the API is unreachable":
//   NotFound          404
//   AlreadyExists     409 on create
//   Aborted           409 on update (stale resourceVersion)
//   Unauthenticated   401
//   PermissionDenied  403
//   InvalidArgument   400, 422
//   ResourceExhausted never; 429 is Unavailable (retry later)
//   Unavailable       429, 5xx, connection failures
//   DeadlineExceeded  the request deadline passed
//   FailedPrecondition 410 Gone (watch resourceVersion too old)

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_LEASE_STORE_H_

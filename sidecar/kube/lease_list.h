// ListLeases and WatchLeases: every Lease in a namespace or the whole
// cluster, as records with their names, and their changes as they happen —
// for the `baton leases` audit command.
//
// Blocking; a list pages through the collection (500 per request), each
// request bounded by the client's request timeout. Needs the `list` and (to
// follow changes) `watch` verbs on leases, which the sidecar's own Role does
// not grant.
#ifndef BATON_SIDECAR_KUBE_LEASE_LIST_H_
#define BATON_SIDECAR_KUBE_LEASE_LIST_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sidecar/election/lease_record.h"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

struct NamedLease {
  std::string namespace_name;
  std::string name;
  LeaseRecord record;
};

// A list's items and the collection's resourceVersion, to watch from.
struct LeaseList {
  std::vector<NamedLease> items;
  std::string resource_version;
};

// The Leases of namespace `ns` (empty: all namespaces), in the server's
// order (by namespace, then name). Errors as in api_errors.h.
absl::StatusOr<LeaseList> ListLeases(KubeClient& client, absl::string_view ns);

// One change seen by WatchLeases.
struct LeaseChange {
  enum class Type { kAdded, kModified, kDeleted };
  Type type;
  // The Lease as it now is; for kDeleted, its names only (the record is
  // empty).
  NamedLease lease;
};

// Watches the Leases of `ns` (empty: all namespaces) from `resource_version`
// (a list's) for one request of `server_timeout`, calling `on_change` for
// every change in order and advancing `resource_version` past every event
// and bookmark, so the caller can watch again from it. Returns OK when the
// server ends the watch; FailedPrecondition when `resource_version` is too
// old (410 Gone: list again); other errors as in api_errors.h; Cancelled
// after client.Cancel().
absl::Status WatchLeases(KubeClient& client, absl::string_view ns, std::string& resource_version,
                         absl::Duration server_timeout,
                         absl::FunctionRef<void(const LeaseChange&)> on_change);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_LEASE_LIST_H_

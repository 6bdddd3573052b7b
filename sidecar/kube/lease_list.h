// ListLeases: every Lease in a namespace or the whole cluster, as records
// with their names — for the `baton leases` audit command.
//
// Blocking; pages through the collection (500 per request), each request
// bounded by the client's request timeout. Needs the `list` verb on leases,
// which the sidecar's own Role does not grant.
#ifndef BATON_SIDECAR_KUBE_LEASE_LIST_H_
#define BATON_SIDECAR_KUBE_LEASE_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/election/lease_record.h"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

struct NamedLease {
  std::string namespace_name;
  std::string name;
  LeaseRecord record;
};

// The Leases of namespace `ns` (empty: all namespaces), in the server's
// order (by namespace, then name). Errors as in api_errors.h.
absl::StatusOr<std::vector<NamedLease>> ListLeases(KubeClient& client, absl::string_view ns);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_LEASE_LIST_H_

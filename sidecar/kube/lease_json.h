// Conversions between a coordination.k8s.io/v1 Lease object (JSON) and the
// LeaseRecord the election engine works with.
//
// Reading takes the election fields and metadata.resourceVersion/uid;
// writing patches exactly holderIdentity, leaseDurationSeconds, acquireTime,
// renewTime and leaseTransitions (and metadata.resourceVersion) into an
// existing object, so everything else in it — labels, annotations,
// strategy, preferredHolder, fields newer than baton — is sent back as read.
//
// Pure functions; thread-safe.
#ifndef BATON_SIDECAR_KUBE_LEASE_JSON_H_
#define BATON_SIDECAR_KUBE_LEASE_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "boost/json/object.hpp"
#include "sidecar/election/lease_record.h"

namespace baton::kube {

// "/apis/coordination.k8s.io/v1/namespaces/<ns>/leases" (all namespaces: ns
// empty), and that plus "/<name>". Names are percent-encoded.
std::string LeasesPath(absl::string_view ns);
std::string LeasePath(absl::string_view ns, absl::string_view name);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(absl::string_view s);

// The election view of `lease`. Missing spec fields read as empty/zero.
// Internal if a field has the wrong type, a number is out of range or a time
// is not RFC 3339 (the API server never sends those).
absl::StatusOr<LeaseRecord> LeaseRecordFromJson(const boost::json::object& lease);

// metadata.name / metadata.namespace / metadata.resourceVersion, or "".
std::string LeaseMetadataString(const boost::json::object& lease, absl::string_view key);

// A Lease object with only apiVersion, kind, metadata.name and
// metadata.namespace.
boost::json::object NewLeaseObject(absl::string_view ns, absl::string_view name);

// Writes `record`'s election fields and resource_version into `lease`,
// leaving every other field as it is. An absent time removes the field.
void ApplyLeaseRecord(const LeaseRecord& record, boost::json::object& lease);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_LEASE_JSON_H_

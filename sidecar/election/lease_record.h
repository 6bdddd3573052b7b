// LeaseRecord: the part of a coordination.k8s.io/v1 Lease that leader election
// reads and writes, as a plain value.
//
// Field meanings follow client-go's LeaderElectionRecord so that baton and a Go
// controller using tools/leaderelection interpret one Lease the same way. The
// kube client maps this to and from the Lease object; fields of the object that
// are not here (labels, annotations, strategy, preferredHolder, ...) are kept
// by the store across updates, never dropped.
#ifndef BATON_SIDECAR_ELECTION_LEASE_RECORD_H_
#define BATON_SIDECAR_ELECTION_LEASE_RECORD_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace baton {

struct LeaseRecord {
  // spec.holderIdentity; empty means nobody holds it and it may be taken at once.
  std::string holder_identity;
  // spec.leaseDurationSeconds: the holder's promise of how long, from its last
  // renew, it will consider itself leader. Candidates judge expiry by this
  // value, not by their own configured duration.
  int32_t lease_duration_seconds = 0;
  // spec.acquireTime / spec.renewTime (MicroTime). Written for other readers;
  // never compared with the local wall clock to decide expiry.
  std::optional<absl::Time> acquire_time;
  std::optional<absl::Time> renew_time;
  // spec.leaseTransitions: bumped by every takeover. baton's fencing token.
  int32_t lease_transitions = 0;

  // metadata.resourceVersion of the object this record was read from (or was
  // written as). An update must carry it; a stale one gets a Conflict.
  std::string resource_version;
  // metadata.uid; changes when the Lease is deleted and recreated.
  std::string uid;

  friend bool operator==(const LeaseRecord&, const LeaseRecord&) = default;
};

// What a watch saw: the Lease as it now is, or (record unset) its deletion,
// with the resourceVersion of the event. An absence without a
// resourceVersion (a GET that found nothing) cannot be ordered against other
// observations.
struct LeaseEvent {
  std::optional<LeaseRecord> record;
  std::string resource_version;

  friend bool operator==(const LeaseEvent&, const LeaseEvent&) = default;
};

// A resourceVersion in the order KEP-5504 defines for Kubernetes 1.35+: the
// resourceVersions of one resource type are decimal integers without leading
// zeros, of up to 128 bits, ordered by length and then digit by digit (older
// etcd-backed servers give the same in practice). Anything else (empty, not
// decimal, a leading zero, above 2^128 - 1) has no order: Parse returns
// nullopt, and such an observation is not ordered against others.
class ResourceVersion {
 public:
  static std::optional<ResourceVersion> Parse(std::string_view resource_version);

  // The value in decimal digits, as the API server wrote it.
  const std::string& digits() const { return digits_; }
  // The value, where it fits an int64 (the fencing revision's int64 field).
  std::optional<int64_t> AsInt64() const { return int64_; }

  friend bool operator==(const ResourceVersion&, const ResourceVersion&) = default;
  friend std::strong_ordering operator<=>(const ResourceVersion& a, const ResourceVersion& b) {
    if (a.digits_.size() != b.digits_.size()) return a.digits_.size() <=> b.digits_.size();
    return a.digits_.compare(b.digits_) <=> 0;
  }

 private:
  ResourceVersion(std::string_view digits, std::optional<int64_t> int64)
      : digits_(digits), int64_(int64) {}
  std::string digits_;
  // digits_ as an int64, parsed once: every answer that carries this
  // revision sends it.
  std::optional<int64_t> int64_;
};

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_LEASE_RECORD_H_

// KubeLeaseStore: the LeaseStore of the daemon, backed by one
// coordination.k8s.io/v1 Lease in the Kubernetes API.
//
// Get is a GET, Create a POST, Update a PUT carrying the record's
// resourceVersion (the API server's optimistic concurrency: a stale one is
// 409 → Aborted). Errors follow the table in lease_store.h (api_errors.h).
//
// Fields baton does not know survive an update. The store keeps the whole
// Lease object it last read or wrote and sends that object back with only
// the election fields changed — never an object rebuilt from the record
// (client-go's renew drops strategy/preferredHolder that way). When the
// record to write did not come from this store (its resourceVersion is not
// the cached object's, e.g. it came from a LeaseWatcher), the store GETs the
// Lease first and writes only if it is still at that resourceVersion,
// answering Aborted otherwise, exactly as the server would have. It never
// PUTs a minimal object: with a current resourceVersion the server would
// accept it and erase labels, annotations and newer spec fields.
//
// Thread-safe; calls block for at most the client's request timeout (Update
// that must re-read: twice that).
#ifndef BATON_SIDECAR_KUBE_KUBE_LEASE_STORE_H_
#define BATON_SIDECAR_KUBE_KUBE_LEASE_STORE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "boost/json/object.hpp"
#include "sidecar/election/lease_store.h"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

class KubeLeaseStore final : public LeaseStore {
 public:
  // Binds the store to Lease `ns`/`name`. `client` must not be null.
  KubeLeaseStore(std::shared_ptr<KubeClient> client, std::string ns, std::string name);

  absl::StatusOr<LeaseRecord> Get() override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<LeaseRecord> Create(const LeaseRecord& record) override ABSL_LOCKS_EXCLUDED(mu_);
  // InvalidArgument if record.resource_version is empty (an unconditional
  // write could overwrite another holder).
  absl::StatusOr<LeaseRecord> Update(const LeaseRecord& record) override ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& lease_namespace() const { return ns_; }
  const std::string& lease_name() const { return name_; }

 private:
  // Parses an answer, caches the object and returns its record.
  absl::StatusOr<LeaseRecord> Remember(absl::StatusOr<boost::json::value> answer)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The object to send for `record`: the cached one if it is at the
  // record's version, else a fresh read that must be.
  absl::StatusOr<boost::json::object> BaseFor(const LeaseRecord& record) ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<KubeClient> client_;
  const std::string ns_;
  const std::string name_;
  const std::string path_;

  absl::Mutex mu_;
  // The Lease object last read or written; empty before the first.
  boost::json::object last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_KUBE_LEASE_STORE_H_

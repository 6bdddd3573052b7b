#include "sidecar/kube/kube_lease_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/json/serialize.hpp"
#include "sidecar/kube/lease_json.h"

namespace baton::kube {

KubeLeaseStore::KubeLeaseStore(std::shared_ptr<KubeClient> client, std::string ns, std::string name)
    : client_(std::move(client)),
      ns_(std::move(ns)),
      name_(std::move(name)),
      path_(LeasePath(ns_, name_)) {}

absl::StatusOr<LeaseRecord> KubeLeaseStore::Remember(absl::StatusOr<boost::json::value> answer) {
  if (!answer.ok()) return answer.status();
  boost::json::object* lease = answer->if_object();
  if (lease == nullptr) {
    return absl::InternalError(
        absl::StrCat("Lease ", ns_, "/", name_, ": the API server answered a non-object"));
  }
  absl::StatusOr<LeaseRecord> record = LeaseRecordFromJson(*lease);
  if (!record.ok()) return record.status();
  absl::MutexLock lock(&mu_);
  last_ = std::move(*lease);
  return record;
}

absl::StatusOr<LeaseRecord> KubeLeaseStore::Get() {
  return Remember(client_->Call(ApiVerb::kGet, path_));
}

absl::StatusOr<LeaseRecord> KubeLeaseStore::Create(const LeaseRecord& record) {
  boost::json::object lease = NewLeaseObject(ns_, name_);
  LeaseRecord fresh = record;
  fresh.resource_version.clear();
  ApplyLeaseRecord(fresh, lease);
  return Remember(client_->Call(ApiVerb::kCreate, LeasesPath(ns_), boost::json::serialize(lease)));
}

absl::StatusOr<boost::json::object> KubeLeaseStore::BaseFor(const LeaseRecord& record) {
  {
    absl::MutexLock lock(&mu_);
    if (LeaseMetadataString(last_, "resourceVersion") == record.resource_version) return last_;
  }
  absl::StatusOr<boost::json::value> fresh = client_->Call(ApiVerb::kGet, path_);
  if (absl::StatusOr<LeaseRecord> read = Remember(fresh); !read.ok()) {
    return read.status();
  } else if (read->resource_version != record.resource_version) {
    return absl::AbortedError(
        absl::StrCat("Lease ", ns_, "/", name_, " changed since resourceVersion ",
                     record.resource_version, " (now ", read->resource_version, "); re-read it"));
  }
  return std::move(fresh->get_object());
}

absl::StatusOr<LeaseRecord> KubeLeaseStore::Update(const LeaseRecord& record) {
  if (record.resource_version.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("update of Lease ", ns_, "/", name_,
                                                   " needs the resourceVersion it was read at"));
  }
  absl::StatusOr<boost::json::object> lease = BaseFor(record);
  if (!lease.ok()) return lease.status();
  ApplyLeaseRecord(record, *lease);
  return Remember(client_->Call(ApiVerb::kUpdate, path_, boost::json::serialize(*lease)));
}

}  // namespace baton::kube

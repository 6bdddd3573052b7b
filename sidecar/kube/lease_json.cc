#include "sidecar/kube/lease_json.h"

#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "boost/json/value.hpp"
#include "sidecar/kube/micro_time.h"
#include "sidecar/kube/string_views.h"

namespace baton::kube {
namespace {

const boost::json::object* ObjectAt(const boost::json::object& parent,
                                    boost::json::string_view key) {
  const boost::json::value* v = parent.if_contains(key);
  return v != nullptr ? v->if_object() : nullptr;
}

absl::Status WrongType(absl::string_view field, absl::string_view want) {
  return absl::InternalError(
      absl::StrCat("malformed Lease from the API server: ", field, " is not ", want));
}

absl::Status ReadString(const boost::json::object& obj, boost::json::string_view key,
                        absl::string_view field, std::string& out) {
  const boost::json::value* v = obj.if_contains(key);
  if (v == nullptr || v->is_null()) return absl::OkStatus();
  if (!v->is_string()) return WrongType(field, "a string");
  out = std::string(v->get_string());
  return absl::OkStatus();
}

absl::Status ReadInt32(const boost::json::object& obj, boost::json::string_view key,
                       absl::string_view field, int32_t& out) {
  const boost::json::value* v = obj.if_contains(key);
  if (v == nullptr || v->is_null()) return absl::OkStatus();
  if (!v->is_int64() || v->get_int64() < std::numeric_limits<int32_t>::min() ||
      v->get_int64() > std::numeric_limits<int32_t>::max()) {
    return WrongType(field, "a 32-bit integer");
  }
  out = static_cast<int32_t>(v->get_int64());
  return absl::OkStatus();
}

absl::Status ReadTime(const boost::json::object& obj, boost::json::string_view key,
                      absl::string_view field, std::optional<absl::Time>& out) {
  std::string text;
  if (absl::Status s = ReadString(obj, key, field, text); !s.ok()) return s;
  if (text.empty()) return absl::OkStatus();
  absl::StatusOr<absl::Time> t = ParseMicroTime(text);
  if (!t.ok()) {
    return absl::InternalError(
        absl::StrCat("malformed Lease from the API server: ", field, ": ", t.status().message()));
  }
  out = *t;
  return absl::OkStatus();
}

}  // namespace

std::string UrlEncode(absl::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string LeasesPath(absl::string_view ns) {
  if (ns.empty()) return "/apis/coordination.k8s.io/v1/leases";
  return absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", UrlEncode(ns), "/leases");
}

std::string LeasePath(absl::string_view ns, absl::string_view name) {
  return absl::StrCat(LeasesPath(ns), "/", UrlEncode(name));
}

absl::StatusOr<LeaseRecord> LeaseRecordFromJson(const boost::json::object& lease) {
  LeaseRecord record;
  const boost::json::object empty;
  const boost::json::object* metadata = ObjectAt(lease, "metadata");
  const boost::json::object* spec = ObjectAt(lease, "spec");
  if (metadata == nullptr) metadata = &empty;
  if (spec == nullptr) spec = &empty;
  absl::Status statuses[] = {
      ReadString(*metadata, "resourceVersion", "metadata.resourceVersion", record.resource_version),
      ReadString(*metadata, "uid", "metadata.uid", record.uid),
      ReadString(*spec, "holderIdentity", "spec.holderIdentity", record.holder_identity),
      ReadInt32(*spec, "leaseDurationSeconds", "spec.leaseDurationSeconds",
                record.lease_duration_seconds),
      ReadInt32(*spec, "leaseTransitions", "spec.leaseTransitions", record.lease_transitions),
      ReadTime(*spec, "acquireTime", "spec.acquireTime", record.acquire_time),
      ReadTime(*spec, "renewTime", "spec.renewTime", record.renew_time),
  };
  for (absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return record;
}

std::string LeaseMetadataString(const boost::json::object& lease, absl::string_view key) {
  const boost::json::object* metadata = ObjectAt(lease, "metadata");
  if (metadata == nullptr) return "";
  const boost::json::value* v = metadata->if_contains(ToBoost(key));
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

boost::json::object NewLeaseObject(absl::string_view ns, absl::string_view name) {
  boost::json::object metadata;
  metadata["name"] = ToBoost(name);
  metadata["namespace"] = ToBoost(ns);
  boost::json::object lease;
  lease["apiVersion"] = "coordination.k8s.io/v1";
  lease["kind"] = "Lease";
  lease["metadata"] = std::move(metadata);
  return lease;
}

void ApplyLeaseRecord(const LeaseRecord& record, boost::json::object& lease) {
  boost::json::value& metadata = lease["metadata"];
  if (!metadata.is_object()) metadata = boost::json::object();
  if (record.resource_version.empty()) {
    metadata.get_object().erase("resourceVersion");
  } else {
    metadata.get_object()["resourceVersion"] = record.resource_version;
  }

  boost::json::value& spec_value = lease["spec"];
  if (!spec_value.is_object()) spec_value = boost::json::object();
  boost::json::object& spec = spec_value.get_object();
  spec["holderIdentity"] = record.holder_identity;
  spec["leaseDurationSeconds"] = record.lease_duration_seconds;
  spec["leaseTransitions"] = record.lease_transitions;
  auto set_time = [&spec](boost::json::string_view key, const std::optional<absl::Time>& t) {
    if (t.has_value()) {
      spec[key] = FormatMicroTime(*t);
    } else {
      spec.erase(key);
    }
  };
  set_time("acquireTime", record.acquire_time);
  set_time("renewTime", record.renew_time);
}

}  // namespace baton::kube

#include "sidecar/kube/watch_stream.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "sidecar/kube/api_errors.h"
#include "sidecar/kube/lease_json.h"
#include "sidecar/kube/string_views.h"

namespace baton::kube {
namespace {

// A watch event's `object` when the type is ERROR: a metav1.Status.
absl::Status ErrorEventStatus(const boost::json::value* object) {
  int64_t code = 0;
  std::string body;
  if (object != nullptr && object->is_object()) {
    if (const auto* c = object->get_object().if_contains("code"); c != nullptr && c->is_int64()) {
      code = c->get_int64();
    }
    body = boost::json::serialize(*object);
  }
  if (code == 0) code = 500;
  absl::Status status =
      StatusFromResponse(ApiVerb::kWatch, "watch ERROR event", static_cast<int>(code), body);
  // An ERROR event always ends the watch, whatever code it claims.
  if (status.ok()) {
    return absl::InternalError(absl::StrCat("watch ERROR event with code ", code, ": ", body));
  }
  return status;
}

}  // namespace

absl::Status WatchLineFramer::Append(absl::string_view chunk,
                                     absl::FunctionRef<absl::Status(absl::string_view)> on_line) {
  pending_.append(chunk.data(), chunk.size());
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const absl::string_view line(pending_.data() + start, nl - start);
    if (line.find_first_not_of(" \r\t") == absl::string_view::npos) continue;
    if (absl::Status s = on_line(line); !s.ok()) return s;
  }
  pending_.erase(0, start);
  if (pending_.size() > max_line_bytes_) {
    return absl::InternalError(absl::StrCat("watch event larger than ", max_line_bytes_, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<WatchEvent> DecodeWatchEvent(absl::string_view line) {
  boost::system::error_code ec;
  boost::json::value event = boost::json::parse(ToBoost(line), ec);
  const boost::json::object* obj = ec ? nullptr : event.if_object();
  const boost::json::value* type = obj != nullptr ? obj->if_contains("type") : nullptr;
  if (type == nullptr || !type->is_string()) {
    return absl::InternalError("malformed watch event from the API server");
  }
  const boost::json::value* object = obj->if_contains("object");
  if (*type == "ERROR") return ErrorEventStatus(object);
  if (object == nullptr || !object->is_object()) {
    return absl::InternalError(
        absl::StrCat("watch event ", ToAbsl(type->get_string()), " has no object"));
  }
  const boost::json::object& lease = object->get_object();
  WatchEvent decoded;
  decoded.type_name = std::string(ToAbsl(type->get_string()));
  decoded.resource_version = LeaseMetadataString(lease, "resourceVersion");
  decoded.name = LeaseMetadataString(lease, "name");
  decoded.namespace_name = LeaseMetadataString(lease, "namespace");
  if (*type == "BOOKMARK") {
    decoded.type = WatchEvent::Type::kBookmark;
  } else if (*type == "DELETED") {
    decoded.type = WatchEvent::Type::kDeleted;
  } else if (*type == "ADDED" || *type == "MODIFIED") {
    decoded.type = *type == "ADDED" ? WatchEvent::Type::kAdded : WatchEvent::Type::kModified;
    absl::StatusOr<LeaseRecord> record = LeaseRecordFromJson(lease);
    if (!record.ok()) return record.status();
    decoded.record = *std::move(record);
  }
  return decoded;
}

}  // namespace baton::kube

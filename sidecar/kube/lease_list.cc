#include "sidecar/kube/lease_list.h"

#include "absl/strings/str_cat.h"
#include "boost/json/value.hpp"
#include "sidecar/kube/lease_json.h"

namespace baton::kube {
namespace {

constexpr int kPageSize = 500;

}  // namespace

absl::StatusOr<std::vector<NamedLease>> ListLeases(KubeClient& client, absl::string_view ns) {
  std::vector<NamedLease> out;
  std::string continue_token;
  do {
    std::string path = absl::StrCat(LeasesPath(ns), "?limit=", kPageSize);
    if (!continue_token.empty()) absl::StrAppend(&path, "&continue=", UrlEncode(continue_token));
    absl::StatusOr<boost::json::value> page = client.Call(ApiVerb::kList, path);
    if (!page.ok()) return page.status();
    const boost::json::object* list = page->if_object();
    const boost::json::value* items = list != nullptr ? list->if_contains("items") : nullptr;
    if (items == nullptr || !(items->is_array() || items->is_null())) {
      return absl::InternalError(absl::StrCat("list ", path, ": answer has no items array"));
    }
    if (items->is_array()) {
      for (const boost::json::value& item : items->get_array()) {
        if (!item.is_object()) return absl::InternalError("list: an item is not an object");
        absl::StatusOr<LeaseRecord> record = LeaseRecordFromJson(item.get_object());
        if (!record.ok()) return record.status();
        out.push_back({LeaseMetadataString(item.get_object(), "namespace"),
                       LeaseMetadataString(item.get_object(), "name"), *std::move(record)});
      }
    }
    continue_token = LeaseMetadataString(*list, "continue");
  } while (!continue_token.empty());
  return out;
}

}  // namespace baton::kube

#include "sidecar/kube/lease_list.h"

#include "absl/strings/str_cat.h"
#include "boost/json/value.hpp"
#include "sidecar/kube/lease_json.h"
#include "sidecar/kube/watch_stream.h"

namespace baton::kube {
namespace {

constexpr int kPageSize = 500;

}  // namespace

absl::StatusOr<LeaseList> ListLeases(KubeClient& client, absl::string_view ns) {
  LeaseList out;
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
        out.items.push_back({LeaseMetadataString(item.get_object(), "namespace"),
                             LeaseMetadataString(item.get_object(), "name"), *std::move(record)});
      }
    }
    continue_token = LeaseMetadataString(*list, "continue");
    // Every page carries the version of the snapshot the first one began.
    out.resource_version = LeaseMetadataString(*list, "resourceVersion");
  } while (!continue_token.empty());
  return out;
}

absl::Status WatchLeases(KubeClient& client, absl::string_view ns, std::string& resource_version,
                         absl::Duration server_timeout,
                         absl::FunctionRef<void(const LeaseChange&)> on_change) {
  const std::string path = absl::StrCat(
      LeasesPath(ns),
      "?watch=true&allowWatchBookmarks=true&resourceVersion=", UrlEncode(resource_version),
      "&timeoutSeconds=", absl::ToInt64Seconds(server_timeout));
  WatchLineFramer framer(client.options().max_response_bytes);
  auto on_line = [&](absl::string_view line) -> absl::Status {
    absl::StatusOr<WatchEvent> event = DecodeWatchEvent(line);
    if (!event.ok()) return event.status();
    resource_version = event->resource_version;
    LeaseChange change;
    switch (event->type) {
      case WatchEvent::Type::kAdded:
        change.type = LeaseChange::Type::kAdded;
        break;
      case WatchEvent::Type::kModified:
        change.type = LeaseChange::Type::kModified;
        break;
      case WatchEvent::Type::kDeleted:
        change.type = LeaseChange::Type::kDeleted;
        break;
      case WatchEvent::Type::kBookmark:
      case WatchEvent::Type::kUnknown:
        return absl::OkStatus();
    }
    change.lease = {std::move(event->namespace_name), std::move(event->name),
                    event->record.value_or(LeaseRecord{})};
    on_change(change);
    return absl::OkStatus();
  };
  return client.Watch(
      path, server_timeout, [] {},
      [&](absl::string_view data) { return framer.Append(data, on_line); });
}

}  // namespace baton::kube

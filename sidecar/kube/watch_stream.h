// The body of a watch request: one JSON object per line,
// {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}, arriving
// in chunks whose boundaries have nothing to do with the lines. LeaseWatcher
// feeds each chunk to a WatchLineFramer and decodes each line with
// DecodeWatchEvent; both are pure, so they can be tested and fuzzed apart
// from the connection.
#ifndef BATON_SIDECAR_KUBE_WATCH_STREAM_H_
#define BATON_SIDECAR_KUBE_WATCH_STREAM_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/election/lease_record.h"

namespace baton::kube {

// Splits a watch body into its lines, whatever the chunk boundaries. One
// instance per stream; not thread-safe.
class WatchLineFramer {
 public:
  // A line (event) longer than `max_line_bytes` fails the stream.
  explicit WatchLineFramer(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Appends `chunk` and calls `on_line` with each line it completes (without
  // the '\n'), in order, skipping lines of only spaces, tabs and '\r'.
  // Returns the first error `on_line` returns, at once; InternalError when
  // the unfinished line is longer than max_line_bytes.
  absl::Status Append(absl::string_view chunk,
                      absl::FunctionRef<absl::Status(absl::string_view)> on_line);

 private:
  const size_t max_line_bytes_;
  std::string pending_;
};

// One decoded watch event.
struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kUnknown };
  Type type = Type::kUnknown;
  // The "type" as sent (for logging an unknown one).
  std::string type_name;
  // The object's metadata.resourceVersion, .name and .namespace ("" if
  // absent; a bookmark has only the version).
  std::string resource_version;
  std::string name;
  std::string namespace_name;
  // The Lease, for kAdded and kModified.
  std::optional<LeaseRecord> record;
};

// Decodes one line. An ERROR event is returned as its status (mapped as in
// api_errors.h, e.g. FailedPrecondition for 410 Gone; InternalError when its
// code is not an error's); a line that is not an event, an event without an
// object, or an ADDED/MODIFIED Lease that LeaseRecordFromJson refuses is
// InternalError.
absl::StatusOr<WatchEvent> DecodeWatchEvent(absl::string_view line);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_WATCH_STREAM_H_

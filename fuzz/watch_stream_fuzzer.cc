// A watch response body (one JSON event per line) cut into chunks at places
// of the input's choosing: WatchLineFramer must produce the same lines
// whatever the cuts (a prefix of them when a cut makes an unfinished line
// exceed the limit), and every line goes through DecodeWatchEvent.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "sidecar/kube/watch_stream.h"

namespace {

struct Framed {
  std::vector<std::string> lines;
  absl::Status status;
};

// Frames `body` cut after each of `cuts` bytes (then the rest in one piece).
Framed Frame(const std::string& body, size_t max_line, const std::vector<size_t>& cuts) {
  baton::kube::WatchLineFramer framer(max_line);
  Framed out;
  auto on_line = [&](absl::string_view line) {
    out.lines.emplace_back(line);
    return absl::OkStatus();
  };
  size_t at = 0;
  for (size_t cut : cuts) {
    const size_t n = std::min(cut, body.size() - at);
    out.status = framer.Append(absl::string_view(body).substr(at, n), on_line);
    at += n;
    if (!out.status.ok()) return out;
  }
  out.status = framer.Append(absl::string_view(body).substr(at), on_line);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  const size_t max_line = input.ConsumeIntegralInRange<size_t>(1, 1 << 16);
  std::vector<size_t> cuts(input.ConsumeIntegralInRange<size_t>(0, 16));
  for (size_t& cut : cuts) cut = input.ConsumeIntegralInRange<size_t>(0, 256);
  const std::string body = input.ConsumeRemainingBytesAsString();

  const Framed whole = Frame(body, max_line, {});
  const Framed cut = Frame(body, max_line, cuts);
  FUZZ_CHECK(cut.lines.size() <= whole.lines.size());
  for (size_t i = 0; i < cut.lines.size(); ++i) FUZZ_CHECK(cut.lines[i] == whole.lines[i]);
  if (cut.status.ok()) {
    FUZZ_CHECK(whole.status.ok());
    FUZZ_CHECK(cut.lines.size() == whole.lines.size());
  }

  for (const std::string& line : whole.lines) {
    FUZZ_CHECK(line.find('\n') == std::string::npos);
    absl::StatusOr<baton::kube::WatchEvent> event = baton::kube::DecodeWatchEvent(line);
    if (!event.ok()) continue;
    const bool has_lease = event->type == baton::kube::WatchEvent::Type::kAdded ||
                           event->type == baton::kube::WatchEvent::Type::kModified;
    FUZZ_CHECK(event->record.has_value() == has_lease);
    if (has_lease) FUZZ_CHECK(event->record->resource_version == event->resource_version);
  }
  return 0;
}

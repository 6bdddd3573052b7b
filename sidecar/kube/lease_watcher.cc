#include "sidecar/kube/lease_watcher.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "sidecar/common/log.h"
#include "sidecar/kube/api_errors.h"
#include "sidecar/kube/lease_json.h"
#include "sidecar/kube/watch_stream.h"

namespace baton::kube {
namespace {

// A stream that ends sooner than this without error is treated like a
// failure for pacing, so a server that closes watches at once is not spun on.
constexpr absl::Duration kMinHealthyWatch = absl::Seconds(1);

}  // namespace

LeaseWatcher::LeaseWatcher(std::unique_ptr<KubeClient> client, std::string ns, std::string name,
                           const Clock* clock, RecordCallback on_record, StatusCallback on_status,
                           LeaseWatcherOptions options)
    : client_(std::move(client)),
      ns_(std::move(ns)),
      name_(std::move(name)),
      clock_(clock),
      on_record_(std::move(on_record)),
      on_status_(std::move(on_status)),
      options_(options) {}

LeaseWatcher::~LeaseWatcher() { Stop(); }

void LeaseWatcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaseWatcher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  client_->Cancel();
  if (thread_.joinable()) thread_.join();
}

bool LeaseWatcher::Stopped() const {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool LeaseWatcher::Wait(absl::Duration d) {
  const MonoTime until = clock_->Monotonic() + d;
  absl::MutexLock lock(&mu_);
  return !clock_->AwaitUntil(&mu_, absl::Condition(&stop_), until);
}

void LeaseWatcher::Deliver(const LeaseEvent& event) {
  if (on_record_) on_record_(event);
}

void LeaseWatcher::Report(const absl::Status& status) {
  if (status.ok()) {
    if (open_reported_) return;
    open_reported_ = true;
  } else {
    open_reported_ = false;
  }
  if (on_status_) on_status_(status);
}

std::string LeaseWatcher::WatchPath(const std::string& rv) const {
  absl::BitGen rng;
  const absl::Duration timeout = options_.watch_timeout * absl::Uniform(rng, 1.0, 2.0);
  std::string path = absl::StrCat(
      LeasesPath(ns_), "?watch=1&fieldSelector=", UrlEncode(absl::StrCat("metadata.name=", name_)),
      "&allowWatchBookmarks=true&timeoutSeconds=",
      std::max<int64_t>(1, absl::ToInt64Seconds(timeout)));
  if (!rv.empty()) absl::StrAppend(&path, "&resourceVersion=", UrlEncode(rv));
  return path;
}

absl::Status LeaseWatcher::Resync() {
  absl::StatusOr<boost::json::value> got = client_->Call(ApiVerb::kGet, LeasePath(ns_, name_));
  if (absl::IsNotFound(got.status())) {
    Deliver(LeaseEvent{});
    return absl::OkStatus();
  }
  if (!got.ok()) return got.status();
  if (!got->is_object()) return absl::InternalError("GET Lease: the answer is not an object");
  absl::StatusOr<LeaseRecord> record = LeaseRecordFromJson(got->get_object());
  if (!record.ok()) return record.status();
  const std::string rv = record->resource_version;
  Deliver(LeaseEvent{*std::move(record), rv});
  return absl::OkStatus();
}

absl::Status LeaseWatcher::HandleEvent(absl::string_view line, std::string& rv) {
  absl::StatusOr<WatchEvent> event = DecodeWatchEvent(line);
  if (!event.ok()) return event.status();
  switch (event->type) {
    case WatchEvent::Type::kBookmark:
      rv = std::move(event->resource_version);
      return absl::OkStatus();
    case WatchEvent::Type::kDeleted:
      rv = std::move(event->resource_version);
      Deliver(LeaseEvent{std::nullopt, rv});
      return absl::OkStatus();
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified:
      rv = event->record->resource_version;
      Deliver(LeaseEvent{std::move(event->record), rv});
      return absl::OkStatus();
    case WatchEvent::Type::kUnknown:
      break;
  }
  spdlog::warn("event=watch_event_ignored lease={}/{} type={}", ns_, name_,
               LogValue(event->type_name));
  return absl::OkStatus();
}

absl::Status LeaseWatcher::WatchOnce(std::string& rv, bool& opened) {
  WatchLineFramer framer(client_->options().max_response_bytes);
  return client_->Watch(
      WatchPath(rv), options_.watch_timeout * 2,
      [&] {
        opened = true;
        Report(absl::OkStatus());
      },
      [&](absl::string_view data) -> absl::Status {
        return framer.Append(data, [&](absl::string_view line) { return HandleEvent(line, rv); });
      });
}

void LeaseWatcher::Run() {
  absl::BitGen rng;
  absl::Duration backoff = options_.min_backoff;
  auto wait_after_failure = [&](const absl::Status& status) {
    absl::Duration wait = backoff * absl::Uniform(rng, 0.5, 1.0);
    if (absl::IsPermissionDenied(status) || absl::IsUnauthenticated(status)) {
      wait = options_.max_backoff;
    }
    if (std::optional<absl::Duration> asked = RetryAfter(status)) wait = std::max(wait, *asked);
    backoff = std::min(backoff * 2, options_.max_backoff);
    return Wait(wait);
  };

  std::string rv;
  bool synced = false;
  while (!Stopped()) {
    if (!synced) {
      absl::Status read = Resync();
      if (Stopped()) break;
      if (!read.ok()) {
        spdlog::warn("event=lease_read_failed lease={}/{} error={} next=retry", ns_, name_,
                     LogValue(read.ToString()));
        Report(read);
        if (!wait_after_failure(read)) break;
        continue;
      }
      // Watch from "now", not from the Lease's own resourceVersion: that is
      // when it last changed, which may predate the API server's watch
      // cache (after a restart it always does) and would be Gone again.
      rv.clear();
      synced = true;
    }

    const MonoTime started = clock_->Monotonic();
    const bool from_now = rv.empty();
    bool opened = false;
    absl::Status s = WatchOnce(rv, opened);
    if (Stopped()) break;
    if (opened) backoff = options_.min_backoff;
    if (absl::IsFailedPrecondition(s) && !from_now) {
      spdlog::info("event=watch_expired lease={}/{} error={} next=reread", ns_, name_,
                   LogValue(s.ToString()));
      synced = false;
      continue;
    }
    if (s.ok()) {
      if (clock_->Monotonic() - started >= kMinHealthyWatch) continue;
      s = absl::UnavailableError("watch ended at once");
    }
    spdlog::warn("event=watch_failed lease={}/{} error={} next=rewatch", ns_, name_,
                 LogValue(s.ToString()));
    Report(s);
    if (!wait_after_failure(s)) break;
  }
}

}  // namespace baton::kube

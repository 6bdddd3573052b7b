// LeaseWatcher: follows one Lease through the API server's watch and tells
// its owner every change, so followers notice a release or takeover at once
// instead of polling.
//
// On its own thread it GETs the Lease (unless told a resourceVersion to
// start from), then watches it (fieldSelector metadata.name, with bookmarks)
// from "now": the server first replays the Lease's current state, so nothing
// that happened after the GET is missed. It reopens the watch from the last
// resourceVersion seen (event or bookmark) whenever the server ends it (every
// watch_timeout, jittered) or the connection fails (with jittered
// exponential backoff, honouring Retry-After; an API-server restart is just
// such a failure). When the server says that resourceVersion is too old (410
// Gone / Expired: compacted, or older than a restarted server's watch cache),
// it re-GETs and watches from now again.
//
// Only the Lease's own GET and a watch are needed (RBAC verbs get, watch);
// never list, whose collection resourceVersion client-go's reflector uses.
//
// Callbacks run on the watcher's thread, one at a time, never after Stop()
// returns, and must not call Stop():
//   on_record(event)    the Lease as it now is (event.record), or its
//                       absence (deleted: with the deletion's
//                       resourceVersion; absent at a GET: with none), for
//                       every event and every (re-)GET. The owner orders
//                       them by resourceVersion (Elector::Observe).
//   on_status(status)   an attempt failed (codes as in api_errors.h; e.g.
//                       PermissionDenied when the Role lacks `watch`, so the
//                       owner can fall back to polling), or, with OkStatus(),
//                       a watch is open again after start-up or a failure.
//
// Start/Stop are not thread-safe with each other; call them from one thread.
#ifndef BATON_SIDECAR_KUBE_LEASE_WATCHER_H_
#define BATON_SIDECAR_KUBE_LEASE_WATCHER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/lease_record.h"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

struct LeaseWatcherOptions {
  // timeoutSeconds of one watch request; each is jittered up to twice this,
  // as client-go does. An idle follower makes one request per period.
  absl::Duration watch_timeout = absl::Minutes(5);
  // Backoff between failed attempts: starts at min, doubles to max, jittered.
  absl::Duration min_backoff = absl::Milliseconds(250);
  absl::Duration max_backoff = absl::Seconds(10);
};

class LeaseWatcher {
 public:
  using RecordCallback = std::function<void(const LeaseEvent&)>;
  using StatusCallback = std::function<void(const absl::Status&)>;

  // Watches Lease `ns`/`name` through `client`, which the watcher owns: a
  // watch holds its connection for minutes, so give it a client of its own.
  // Backoff waits on `clock`, which must outlive the watcher.
  LeaseWatcher(std::unique_ptr<KubeClient> client, std::string ns, std::string name,
               const Clock* clock, RecordCallback on_record, StatusCallback on_status,
               LeaseWatcherOptions options = {});
  LeaseWatcher(const LeaseWatcher&) = delete;
  LeaseWatcher& operator=(const LeaseWatcher&) = delete;
  // Stops the watcher.
  ~LeaseWatcher();

  // Starts the thread. Call once.
  void Start();

  // Cancels the request in flight and joins the thread; returns within
  // milliseconds. Idempotent.
  void Stop();

 private:
  void Run();
  // GETs the Lease and delivers it (nullopt if it does not exist).
  absl::Status Resync();
  // One watch request from `rv`, advancing it with every event. OK when the
  // server ends the stream; FailedPrecondition when `rv` has expired.
  absl::Status WatchOnce(std::string& rv, bool& opened);
  absl::Status HandleEvent(absl::string_view line, std::string& rv);
  void Deliver(const LeaseEvent& event);
  void Report(const absl::Status& status);
  // Waits `d` unless stopped first; false if stopped.
  bool Wait(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopped() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string WatchPath(const std::string& rv) const;

  const std::unique_ptr<KubeClient> client_;
  const std::string ns_;
  const std::string name_;
  const Clock* const clock_;
  const RecordCallback on_record_;
  const StatusCallback on_status_;
  const LeaseWatcherOptions options_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;

  // Used by the watcher thread only.
  bool open_reported_ = false;
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_LEASE_WATCHER_H_

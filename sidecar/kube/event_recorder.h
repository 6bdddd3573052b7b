// EventRecorder: Kubernetes Events (events.k8s.io/v1) about the Lease, such
// as "pod-a_x7k2q became leader", written from a worker thread of its own so
// that the election loop never waits for the API server.
//
// Record() only queues; the worker sends one Event per queued record. Two
// limits keep it cheap whatever happens to the election: the queue holds at
// most `queue_capacity` records (more are dropped), and the worker sends at
// most `burst` Events at once, then one per `refill` (more are dropped), in
// the spirit of client-go's event spam filter. A 403 (the Role lacks `create`
// on events.k8s.io events) is logged once, and nothing is sent after it:
// Events are optional. Other failures are logged once in a row.
#ifndef BATON_SIDECAR_KUBE_EVENT_RECORDER_H_
#define BATON_SIDECAR_KUBE_EVENT_RECORDER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

struct EventRecorderOptions {
  // The Lease the Events are about; they are created in its namespace.
  std::string lease_namespace;
  std::string lease_name;
  // This sidecar's identity: the Events' reportingInstance.
  std::string identity;
  size_t queue_capacity = 16;
  int burst = 10;
  absl::Duration refill = absl::Seconds(6);
};

// One Event to record. `type` is "Normal" or "Warning"; `reason` and
// `action` are CamelCase words (reason "LeaderElection", as client-go's);
// `note` is for people, at most 1 kB.
struct EventRecord {
  std::string type = "Normal";
  std::string reason;
  std::string action;
  std::string note;
};

class EventRecorder {
 public:
  struct Counts {
    uint64_t sent = 0;
    uint64_t dropped = 0;  // queue full, rate limited, or after a 403
    uint64_t failed = 0;   // the API server refused or did not answer
    bool forbidden = false;
  };

  // `clock` (the rate limit, the Events' eventTime and Stop's deadline)
  // must outlive the recorder.
  EventRecorder(std::unique_ptr<KubeClient> client, EventRecorderOptions options,
                const Clock* clock);
  // Stop(clock->Monotonic()).
  ~EventRecorder();

  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Starts the worker. Call once.
  void Start();

  // Queues `record`, or drops it if the queue is full or Events are
  // forbidden. Never blocks on I/O; thread-safe.
  void Record(EventRecord record);

  // Stops the worker once what is queued has been sent, or at `deadline` on
  // the clock: then what is still queued is dropped and a request in flight
  // cancelled. Record() drops from the start of Stop. Blocks until the
  // worker has exited. Idempotent.
  void Stop(MonoTime deadline);

  // Thread-safe.
  Counts counts() const;

 private:
  void Run();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool DrainedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the rate limit lets one more Event out at `now`; takes it if so.
  bool TakeToken(MonoTime now);
  absl::Status Send(const EventRecord& record);

  const std::unique_ptr<KubeClient> client_;
  const EventRecorderOptions options_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  std::deque<EventRecord> queue_ ABSL_GUARDED_BY(mu_);
  // Stop has begun: Record drops. Once `stopped_`, the worker exits.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool sending_ ABSL_GUARDED_BY(mu_) = false;
  Counts counts_ ABSL_GUARDED_BY(mu_);

  // The worker's own.
  double tokens_;
  MonoTime last_refill_;
  bool failing_ = false;
  std::thread worker_;
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_EVENT_RECORDER_H_

// PodLabeler: the opt-in leader Pod label (--leader-label=KEY). While this
// sidecar leads, its own Pod carries the label KEY=true, so a Service that
// selects it reaches the leader; as the sidecar stops leading, and when it
// starts, the label comes off. An annotation, baton.dev/leader-of =
// "<lease namespace>/<lease name>", says which Lease the label stands for,
// so workloads that share a namespace and a key leave each other's alone.
//
// The label follows the term from a worker thread of its own, so the
// election never waits for the API server: SetLeading() only records what
// the label should be, and the worker brings the Pods there with JSON merge
// patches, retrying every `retry` until it can.
//
// Becoming leader, the worker first takes the label off every other Pod in
// its namespace that carries it for the same Lease (a previous leader that
// was killed, paused or cut off from the API server could not take it off
// itself), and only then labels its own Pod: in a handover the old Pod's
// label is gone before the new one's appears. While leading it does both
// again every `resync`, which bounds how long a stray label lasts (a
// delayed write that lands late, an operator's edit). When the sweep is
// forbidden (the Role lacks `list` on pods) it says so once and labels its
// own Pod all the same.
//
// The label is for routing, not for safety: a Pod keeps it for as long as
// its removal takes to reach the API server after the sidecar stopped
// leading. Writes that must not overlap carry the fencing token.
#ifndef BATON_SIDECAR_KUBE_POD_LABELER_H_
#define BATON_SIDECAR_KUBE_POD_LABELER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

// The annotation naming the Lease a leader label stands for.
inline constexpr char kLeaderOfAnnotation[] = "baton.dev/leader-of";

// Checks `key` is a Kubernetes label key: an optional DNS subdomain prefix
// (at most 253 characters) and "/", then a name of at most 63 characters of
// [A-Za-z0-9-_.] that starts and ends with a letter or digit.
// InvalidArgument saying what is wrong.
absl::Status ValidateLabelKey(absl::string_view key);

struct PodLabelerOptions {
  // This sidecar's own Pod.
  std::string pod_namespace;
  std::string pod_name;
  // The label; ValidateLabelKey must accept it.
  std::string label_key;
  // The Lease, as "<namespace>/<name>": the annotation's value.
  std::string lease;
  // While leading: sweep and label again this often.
  absl::Duration resync = absl::Seconds(15);
  // After a failed attempt: try again this much later.
  absl::Duration retry = absl::Seconds(2);
};

class PodLabeler {
 public:
  // The worker waits (retry, resync, Stop's deadline) on `clock`, which
  // must outlive the labeler.
  PodLabeler(std::unique_ptr<KubeClient> client, PodLabelerOptions options, const Clock* clock);
  // Stop(clock->Monotonic()).
  ~PodLabeler();

  PodLabeler(const PodLabeler&) = delete;
  PodLabeler& operator=(const PodLabeler&) = delete;

  // Starts the worker, which first takes the label off this Pod (a previous
  // run of the sidecar may have left it). Call once.
  void Start();

  // Whether this sidecar leads now. Never blocks on I/O; thread-safe.
  void SetLeading(bool leading);

  // Stops the worker once this Pod's label is what the last SetLeading
  // asked for (or the attempt failed for good: forbidden, no such Pod), or
  // at `deadline` on the clock, cancelling a request in flight. Blocks until
  // the worker has exited. Idempotent.
  void Stop(MonoTime deadline);

 private:
  void Run();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool SettledLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Brings the Pods to `leading`: sweep, then label this Pod; or unlabel it.
  absl::Status Apply(bool leading);
  // Takes the label off every other Pod that carries it for this Lease.
  absl::Status Sweep();
  absl::Status PatchPod(absl::string_view name, bool label);
  // Logs a failure of step `what` once in a row, and the recovery.
  void LogFailure(const char* what, const absl::Status& status);

  const std::unique_ptr<KubeClient> client_;
  const PodLabelerOptions options_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  bool leading_ ABSL_GUARDED_BY(mu_) = false;
  // Bumped by every SetLeading; the worker notes which one it applied.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t taken_ ABSL_GUARDED_BY(mu_) = 0;    // the one being applied
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;  // the last one applied
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  // The last attempt failed in a way retrying will not fix by itself.
  bool failed_for_good_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // When the worker acts again without news: a retry or a resync. The
  // clock's origin is long past: at once.
  MonoTime due_ ABSL_GUARDED_BY(mu_);

  // The worker's own: the step last logged as failing, so that a failure
  // is logged once in a row, and whether this Pod was last labelled (the
  // removal at start is not news).
  std::string failing_;
  bool labeled_ = false;
  // The sweep was refused for want of `list`, which is logged once.
  bool sweep_forbidden_ = false;
  std::thread worker_;
};

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_POD_LABELER_H_

// `baton leases`: the operator's audit of the Leases in a namespace or the
// whole cluster — who holds each one, how often it changed hands, the
// duration its holder promised, and whether it looks live — once, or
// followed live with --watch (a handover prints as it happens).
//
//   app-lock holder=web-1_x7k2p transitions=4 duration=15s LIVE
//
// It finds its cluster as kubectl does: --kubeconfig, else $KUBECONFIG
// (a ':'-separated list, merged), else ~/.kube/config, else, in a Pod, the
// ServiceAccount; --context picks a context; exec credential plugins (EKS,
// GKE, AKS, OIDC logins) are run, and run again when their credential
// expires.
//
// LIVE/EXPIRED is a wall-clock estimate: the Lease's renewTime (written from
// the holder's wall clock) plus leaseDurationSeconds, compared with this
// machine's wall clock. Clock skew between the holder's node and the machine
// running the command shifts the verdict by that skew. The sidecar never
// decides expiry this way (see kLeasesHelp).
//
// main() parses the flags into LeasesOptions and calls RunLeases(); the
// formatting is the pure function FormatLeases().
#ifndef BATON_SIDECAR_TOOLS_LEASES_COMMAND_H_
#define BATON_SIDECAR_TOOLS_LEASES_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "sidecar/common/clock.h"
#include "sidecar/election/lease_record.h"
#include "sidecar/kube/lease_list.h"

namespace baton::tools {

enum class LeasesOutput {
  kText,  // one key=value line per Lease
  kWide,  // kText plus acquired=, renew_age= and valid_for=
  kJson,  // one JSON document: {"now": ..., "leases": [...]}; with --watch
          // then one JSON object per change, one per line
};

// "text", "wide" or "json"; InvalidArgument naming --output otherwise.
absl::StatusOr<LeasesOutput> ParseLeasesOutput(absl::string_view value);

// What the command is asked to do: the flags of `baton leases`, typed.
struct LeasesOptions {
  // --namespace. Empty: the kubeconfig context's namespace, in a Pod its
  // ServiceAccount namespace, else "default" (as kubectl does).
  std::string namespace_name;
  // --all-namespaces. Excludes --namespace; text lines then start with
  // "<namespace>/".
  bool all_namespaces = false;
  // --kubeconfig. Empty: $KUBECONFIG's files, else `home`/.kube/config,
  // else (none of them exists) the in-cluster config.
  std::string kubeconfig;
  // $KUBECONFIG and $HOME, as main read them.
  std::string kubeconfig_env;
  std::string home;
  // --context. Empty: the kubeconfig's current-context.
  std::string context;
  // --output.
  LeasesOutput output = LeasesOutput::kText;
  // --watch: after the listing, print every change until killed.
  bool watch = false;
  // timeoutSeconds of each watch request (then it is opened again from
  // where it ended), and the wait before a failed one is opened again.
  absl::Duration watch_timeout = absl::Minutes(5);
  absl::Duration watch_retry_delay = absl::Seconds(1);
};

// InvalidArgument, naming the flags, when --namespace and --all-namespaces
// are both given.
absl::Status ValidateLeasesOptions(const LeasesOptions& options);

// The wall-clock judgement of one Lease at `now`.
enum class LeaseState {
  kLive,     // a holder, and now < renewTime + leaseDurationSeconds
  kExpired,  // otherwise: past that, never renewed, or no holder (free to take)
};

LeaseState EstimateLeaseState(const LeaseRecord& record, absl::Time now);

// Renders `leases` sorted by namespace, then name. Text: one line per Lease,
// `[<namespace>/]<name> holder=<holder> transitions=<n> duration=<s>s
// LIVE|EXPIRED`, the holder quoted when empty or containing spaces, the
// namespace prefix only with options.all_namespaces; "" for no Leases. Wide:
// each line then ends ` acquired=<acquireTime> renew_age=<now - renewTime>
// valid_for=<renewTime + duration - now, at least 0>` (wall-clock
// estimates; "-" for a time the Lease lacks). JSON: every field, times in
// RFC 3339 with microseconds, whatever all_namespaces says. Pure;
// thread-safe.
std::string FormatLeases(const LeasesOptions& options, std::vector<kube::NamedLease> leases,
                         absl::Time now);

// Whether --watch prints `change` of a Lease last seen as `before` (null:
// not seen): always for one not seen and for a deletion; else when its
// holder, transitions, duration or acquireTime changed. A renewal alone is
// not printed. Pure.
bool IsNoteworthy(const LeaseRecord* before, const kube::LeaseChange& change);

// One --watch line for `change` at `now`: as FormatLeases' line (a deletion:
// `[<namespace>/]<name> DELETED`); JSON: {"type":"ADDED|MODIFIED|DELETED",
// "now":..., "lease":{...}} (a deletion's lease has only its names). Ends
// with '\n'. Pure; thread-safe.
std::string FormatLeaseChange(const LeasesOptions& options, const kube::LeaseChange& change,
                              absl::Time now);

// Exit codes of RunLeases().
inline constexpr int kLeasesOk = 0;
inline constexpr int kLeasesFailed = 1;    // config, connection or API error; with
                                           // --watch also a Forbidden watch
inline constexpr int kLeasesBadUsage = 2;  // flags that contradict each other

// Runs the command: validates `options`, loads the kubeconfig (or in-cluster
// config), lists the Leases and writes FormatLeases() at clock.Wall() to
// `out`. Errors — and, in text mode, a note when there are no Leases — go to
// `err`, one line each, with a hint when the answer was Forbidden (the
// command needs `list` (and for --watch `watch`) on leases, which the
// sidecar's own Role does not grant). Blocks for at most the client's
// request timeout per page of 500 Leases. With options.watch it then writes
// FormatLeaseChange() for every noteworthy change, watching again whenever
// a watch ends or fails (after options.watch_retry_delay on `clock`; listing
// again when its resourceVersion is too old) and returns only when `out` fails or the watch is
// Forbidden. Returns one of the exit codes above; expired Leases are not errors.
int RunLeases(const LeasesOptions& options, const Clock& clock, std::ostream& out,
              std::ostream& err);

// The command's help text, for `baton leases --help` (a sentence that reads
// well after absl's "baton: " prefix): usage, flags, where the kubeconfig
// is looked for, output formats and why LIVE/EXPIRED is only an estimate.
extern const char kLeasesHelp[];

}  // namespace baton::tools

#endif  // BATON_SIDECAR_TOOLS_LEASES_COMMAND_H_

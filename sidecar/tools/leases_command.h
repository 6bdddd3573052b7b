// `baton leases`: the operator's audit of the Leases in a namespace or the
// whole cluster — who holds each one, how often it changed hands, the
// duration its holder promised, and whether it looks live.
//
//   app-lock holder=web-1_x7k2p transitions=4 duration=15s LIVE
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
  kJson,  // one JSON document: {"now": ..., "leases": [...]}
};

// "text" or "json"; InvalidArgument naming --output otherwise.
absl::StatusOr<LeasesOutput> ParseLeasesOutput(absl::string_view value);

// What the command is asked to do: the flags of `baton leases`, typed.
struct LeasesOptions {
  // --namespace. Empty: the kubeconfig context's namespace, in a Pod its
  // ServiceAccount namespace, else "default" (as kubectl does).
  std::string namespace_name;
  // --all-namespaces. Excludes --namespace; text lines then start with
  // "<namespace>/".
  bool all_namespaces = false;
  // --kubeconfig. Empty: in-cluster config, as for the sidecar.
  std::string kubeconfig;
  // --output.
  LeasesOutput output = LeasesOutput::kText;
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
// namespace prefix only with options.all_namespaces; "" for no Leases. JSON:
// every field, times in RFC 3339 with microseconds, whatever all_namespaces
// says. Pure; thread-safe.
std::string FormatLeases(const LeasesOptions& options, std::vector<kube::NamedLease> leases,
                         absl::Time now);

// Exit codes of RunLeases().
inline constexpr int kLeasesOk = 0;
inline constexpr int kLeasesFailed = 1;    // config, connection or API error
inline constexpr int kLeasesBadUsage = 2;  // flags that contradict each other

// Runs the command: validates `options`, loads the kubeconfig (or in-cluster
// config), lists the Leases and writes FormatLeases() at clock.Wall() to
// `out`. Errors — and, in text mode, a note when there are no Leases — go to
// `err`, one line each, with a hint when the answer was Forbidden (the
// command needs `list` on leases, which the sidecar's own Role does not
// grant). Blocks for at most the client's request timeout per page of 500
// Leases. Returns one of the exit codes above; expired Leases are not errors.
int RunLeases(const LeasesOptions& options, const Clock& clock, std::ostream& out,
              std::ostream& err);

// The command's help text, for `baton leases --help` (a sentence that reads
// well after absl's "baton: " prefix): usage, flags, output format and why
// LIVE/EXPIRED is only an estimate.
extern const char kLeasesHelp[];

}  // namespace baton::tools

#endif  // BATON_SIDECAR_TOOLS_LEASES_COMMAND_H_

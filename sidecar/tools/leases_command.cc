#include "sidecar/tools/leases_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "sidecar/common/log.h"
#include "sidecar/kube/kube_client.h"
#include "sidecar/kube/kubeconfig.h"
#include "sidecar/kube/micro_time.h"
#include "sidecar/kube/rest_config.h"

namespace baton::tools {

const char kLeasesHelp[] =
    R"(audits the coordination.k8s.io/v1 Leases of a namespace or the cluster.

  baton leases [--namespace=NS | --all-namespaces] [--kubeconfig=PATH] [--context=NAME]
               [--output=text|wide|json] [--watch]

  --namespace=NS      the Leases of NS. Default: the kubeconfig context's namespace,
                      in a Pod the Pod's own, else "default".
  --all-namespaces    the Leases of every namespace; text lines start with <namespace>/.
  --kubeconfig=PATH   the kubeconfig to use. Default, as kubectl: the files of
                      $KUBECONFIG (':'-separated, merged: the first file to set
                      current-context, or to define a cluster, user or context of a
                      given name, wins), else ~/.kube/config, else (none exists) the
                      in-cluster config of the Pod it runs in.
  --context=NAME      the kubeconfig context to use. Default: its current-context.
  --output=FORMAT     text (default): one line per Lease, sorted; wide: text plus
                      acquire time, renew age and validity estimate; json: every field.
  --watch             after the listing, follow the Leases and print a line whenever
                      one appears, changes hands, changes its duration or is deleted
                      (renewals alone are not printed), until interrupted. With
                      --output=json, one JSON object per change and line.

Users authenticate as kubectl lets them: token, tokenFile, client certificate, or an
exec credential plugin (client.authentication.k8s.io/v1 or v1beta1: EKS, GKE, AKS,
OIDC logins), which is run again when the credential it printed expires.

Text output, one line per Lease:
  <name> holder=<holder> transitions=<n> duration=<s>s LIVE|EXPIRED
  holder       spec.holderIdentity; "" after a release (anyone may take it at once)
  transitions  spec.leaseTransitions: takeovers so far, the holder's fencing token
  duration     spec.leaseDurationSeconds: how long the holder promises to keep the
               Lease after each renew
Wide output adds:
  acquired     spec.acquireTime: when the holder took the Lease
  renew_age    this machine's clock minus spec.renewTime
  valid_for    renewTime + duration minus this machine's clock, at least 0s: how much
               longer the holder's promise runs
With --watch, a deleted Lease prints as <name> DELETED.

LIVE/EXPIRED, renew_age and valid_for are wall-clock ESTIMATES: renewTime comes from
the holder's wall clock, so clock skew between the holder's node and this machine
moves them by that skew; treat a Lease within a few seconds of its expiry as
undecided. The sidecar never decides this way: a candidate takes a Lease over only
after leaseDurationSeconds have passed on its own monotonic clock since it last saw
the Lease change, so wall-clock skew between nodes can never cause a takeover.

Needs the `list` verb on leases (and `watch` for --watch; kubectl auth can-i list
leases), which the sidecar's own Role does not grant: run it with an operator's
kubeconfig.
Exit status: 0 when the Leases were listed (EXPIRED ones included), 1 on errors,
2 on contradictory flags.
)";

absl::StatusOr<LeasesOutput> ParseLeasesOutput(absl::string_view value) {
  if (value == "text") return LeasesOutput::kText;
  if (value == "wide") return LeasesOutput::kWide;
  if (value == "json") return LeasesOutput::kJson;
  return absl::InvalidArgumentError(absl::StrCat(
      "--output=", value, " is not supported: use --output=text, --output=wide or --output=json"));
}

absl::Status ValidateLeasesOptions(const LeasesOptions& options) {
  if (options.all_namespaces && !options.namespace_name.empty()) {
    return absl::InvalidArgumentError(
        "--namespace and --all-namespaces exclude each other: give one of them");
  }
  return absl::OkStatus();
}

namespace {

// When the holder's promise runs out by its own wall clock; none if it never
// renewed. Held within the years a MicroTime can write: a renewTime near
// 9999 plus a long duration would pass them.
std::optional<absl::Time> ExpiresAt(const LeaseRecord& record) {
  if (!record.renew_time.has_value()) return std::nullopt;
  return std::clamp(*record.renew_time + absl::Seconds(record.lease_duration_seconds),
                    kube::MicroTimeFirst(), kube::MicroTimeLast());
}

const char* StateName(LeaseState state) { return state == LeaseState::kLive ? "LIVE" : "EXPIRED"; }

void SortLeases(std::vector<kube::NamedLease>& leases) {
  std::sort(leases.begin(), leases.end(), [](const kube::NamedLease& a, const kube::NamedLease& b) {
    return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
  });
}

std::string Prefix(const LeasesOptions& options, const kube::NamedLease& lease) {
  return options.all_namespaces ? absl::StrCat(lease.namespace_name, "/", lease.name) : lease.name;
}

// A duration to the millisecond, e.g. "1.204s"; "0s", not absl's "0".
std::string Millis(absl::Duration d) {
  d = absl::Trunc(d, absl::Milliseconds(1));
  return d == absl::ZeroDuration() ? "0s" : absl::FormatDuration(d);
}

std::string TimeOrDash(const std::optional<absl::Time>& t) {
  return t.has_value() ? kube::FormatMicroTime(*t) : "-";
}

// The text (or wide) line of one Lease, with its '\n'.
std::string TextLine(const LeasesOptions& options, const kube::NamedLease& lease, absl::Time now) {
  const LeaseRecord& r = lease.record;
  std::string line =
      absl::StrCat(Prefix(options, lease), " holder=", LogValue(r.holder_identity),
                   " transitions=", r.lease_transitions, " duration=", r.lease_duration_seconds,
                   "s ", StateName(EstimateLeaseState(r, now)));
  if (options.output == LeasesOutput::kWide) {
    const std::optional<absl::Time> expires = ExpiresAt(r);
    absl::StrAppend(&line, " acquired=", TimeOrDash(r.acquire_time),
                    " renew_age=", r.renew_time.has_value() ? Millis(now - *r.renew_time) : "-",
                    " valid_for=",
                    Millis(EstimateLeaseState(r, now) == LeaseState::kLive ? *expires - now
                                                                           : absl::ZeroDuration()));
  }
  absl::StrAppend(&line, "\n");
  return line;
}

std::string FormatText(const LeasesOptions& options, const std::vector<kube::NamedLease>& leases,
                       absl::Time now) {
  std::string out;
  for (const kube::NamedLease& lease : leases) absl::StrAppend(&out, TextLine(options, lease, now));
  return out;
}

boost::json::value TimeOrNull(const std::optional<absl::Time>& t) {
  if (!t.has_value()) return nullptr;
  return boost::json::value(kube::FormatMicroTime(*t));
}

boost::json::object LeaseJson(const kube::NamedLease& lease, absl::Time now) {
  const LeaseRecord& r = lease.record;
  return boost::json::object{
      {"namespace", lease.namespace_name},
      {"name", lease.name},
      {"holderIdentity", r.holder_identity},
      {"leaseTransitions", r.lease_transitions},
      {"leaseDurationSeconds", r.lease_duration_seconds},
      {"acquireTime", TimeOrNull(r.acquire_time)},
      {"renewTime", TimeOrNull(r.renew_time)},
      {"expiresAt", TimeOrNull(ExpiresAt(r))},
      {"state", StateName(EstimateLeaseState(r, now))},
  };
}

std::string FormatJson(const std::vector<kube::NamedLease>& leases, absl::Time now) {
  boost::json::array items;
  for (const kube::NamedLease& lease : leases) items.push_back(LeaseJson(lease, now));
  boost::json::object doc{{"now", kube::FormatMicroTime(now)}, {"leases", std::move(items)}};
  return boost::json::serialize(doc) + "\n";
}

const char* ChangeName(kube::LeaseChange::Type type) {
  switch (type) {
    case kube::LeaseChange::Type::kAdded:
      return "ADDED";
    case kube::LeaseChange::Type::kModified:
      return "MODIFIED";
    case kube::LeaseChange::Type::kDeleted:
      return "DELETED";
  }
  return "MODIFIED";
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// As kubectl finds its cluster: --kubeconfig; else the files of $KUBECONFIG
// or ~/.kube/config, merged; else, when none of them exists, the Pod's
// ServiceAccount.
absl::StatusOr<kube::RestConfig> LoadConfig(const LeasesOptions& options) {
  kube::KubeconfigOptions kubeconfig;
  kubeconfig.context = options.context;
  kubeconfig.allow_exec_plugins = true;
  if (!options.kubeconfig.empty()) return kube::LoadKubeconfig(options.kubeconfig, kubeconfig);
  const std::vector<std::string> paths =
      kube::KubeconfigPaths("", options.kubeconfig_env, options.home);
  if (std::any_of(paths.begin(), paths.end(), FileExists)) {
    return kube::LoadMergedKubeconfig(paths, kubeconfig);
  }
  const std::string looked = paths.empty()
                                 ? std::string("no $KUBECONFIG and no $HOME")
                                 : absl::StrCat("looked for ", absl::StrJoin(paths, ", "));
  if (!options.context.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "--context=", options.context, " needs a kubeconfig, and there is none (", looked, ")"));
  }
  absl::StatusOr<kube::RestConfig> in_cluster = kube::LoadInClusterConfig();
  if (!in_cluster.ok()) {
    return absl::Status(in_cluster.status().code(),
                        absl::StrCat("no kubeconfig (", looked, ") and no in-cluster config: ",
                                     in_cluster.status().message()));
  }
  return in_cluster;
}

// "" for all namespaces; else --namespace, the config's namespace or
// "default", in that order, as kubectl resolves it.
std::string NamespaceToList(const LeasesOptions& options, const kube::RestConfig& config) {
  if (options.all_namespaces) return "";
  if (!options.namespace_name.empty()) return options.namespace_name;
  if (!config.namespace_name.empty()) return config.namespace_name;
  return "default";
}

std::string Describe(const absl::Status& status) {
  std::string msg(status.message());
  if (status.code() == absl::StatusCode::kPermissionDenied) {
    absl::StrAppend(&msg,
                    " (baton leases needs the `list` verb, and for --watch `watch`, on "
                    "leases.coordination.k8s.io, which the sidecar's own Role does not grant; "
                    "use an operator's kubeconfig)");
  }
  return msg;
}

}  // namespace

LeaseState EstimateLeaseState(const LeaseRecord& record, absl::Time now) {
  const std::optional<absl::Time> expires = ExpiresAt(record);
  if (record.holder_identity.empty() || !expires.has_value() || now >= *expires) {
    return LeaseState::kExpired;
  }
  return LeaseState::kLive;
}

std::string FormatLeases(const LeasesOptions& options, std::vector<kube::NamedLease> leases,
                         absl::Time now) {
  SortLeases(leases);
  return options.output == LeasesOutput::kJson ? FormatJson(leases, now)
                                               : FormatText(options, leases, now);
}

bool IsNoteworthy(const LeaseRecord* before, const kube::LeaseChange& change) {
  if (before == nullptr || change.type == kube::LeaseChange::Type::kDeleted) return true;
  const LeaseRecord& after = change.lease.record;
  return std::tie(before->holder_identity, before->lease_transitions,
                  before->lease_duration_seconds, before->acquire_time) !=
         std::tie(after.holder_identity, after.lease_transitions, after.lease_duration_seconds,
                  after.acquire_time);
}

std::string FormatLeaseChange(const LeasesOptions& options, const kube::LeaseChange& change,
                              absl::Time now) {
  const bool deleted = change.type == kube::LeaseChange::Type::kDeleted;
  if (options.output == LeasesOutput::kJson) {
    boost::json::object lease =
        deleted ? boost::json::object{{"namespace", change.lease.namespace_name},
                                      {"name", change.lease.name}}
                : LeaseJson(change.lease, now);
    const boost::json::object doc{{"type", ChangeName(change.type)},
                                  {"now", kube::FormatMicroTime(now)},
                                  {"lease", std::move(lease)}};
    return boost::json::serialize(doc) + "\n";
  }
  if (deleted) return absl::StrCat(Prefix(options, change.lease), " DELETED\n");
  return TextLine(options, change.lease, now);
}

namespace {

// --watch: the Leases as last printed, and what to print as they change.
class LeaseFollower {
 public:
  LeaseFollower(const LeasesOptions& options, const Clock& clock, std::ostream& out)
      : options_(options), clock_(clock), out_(out) {}

  // Takes a listing as what is known, printing nothing.
  void Reset(const std::vector<kube::NamedLease>& leases) {
    known_.clear();
    for (const kube::NamedLease& lease : leases) known_[Key(lease)] = lease.record;
  }

  // A fresh listing after a watch could not go on: prints what changed
  // since the last known state, as if watched.
  void Resync(const std::vector<kube::NamedLease>& leases) {
    std::map<std::pair<std::string, std::string>, bool> listed;
    for (const kube::NamedLease& lease : leases) {
      listed[Key(lease)] = true;
      const bool seen = known_.count(Key(lease)) > 0;
      Apply({seen ? kube::LeaseChange::Type::kModified : kube::LeaseChange::Type::kAdded, lease});
    }
    std::vector<kube::NamedLease> gone;
    for (const auto& [key, record] : known_) {
      if (listed.count(key) == 0) gone.push_back({key.first, key.second, {}});
    }
    for (kube::NamedLease& lease : gone) {
      Apply({kube::LeaseChange::Type::kDeleted, std::move(lease)});
    }
  }

  // One change: printed if noteworthy, then remembered.
  void Apply(const kube::LeaseChange& change) {
    const auto key = Key(change.lease);
    const auto it = known_.find(key);
    if (IsNoteworthy(it == known_.end() ? nullptr : &it->second, change)) {
      out_ << FormatLeaseChange(options_, change, clock_.Wall());
      out_.flush();
    }
    if (change.type == kube::LeaseChange::Type::kDeleted) {
      known_.erase(key);
    } else {
      known_[key] = change.lease.record;
    }
  }

 private:
  static std::pair<std::string, std::string> Key(const kube::NamedLease& lease) {
    return {lease.namespace_name, lease.name};
  }

  const LeasesOptions& options_;
  const Clock& clock_;
  std::ostream& out_;
  std::map<std::pair<std::string, std::string>, LeaseRecord> known_;
};

// --watch after the listing `list`: returns only when `out` fails or the
// watch is refused.
int Follow(const LeasesOptions& options, const Clock& clock, kube::KubeClient& client,
           const std::string& ns, kube::LeaseList list, std::ostream& out, std::ostream& err) {
  LeaseFollower follower(options, clock, out);
  follower.Reset(list.items);
  std::string rv = std::move(list.resource_version);
  while (out.good()) {
    const absl::Status watched =
        kube::WatchLeases(client, ns, rv, options.watch_timeout,
                          [&](const kube::LeaseChange& change) { follower.Apply(change); });
    if (watched.ok()) continue;  // the server ended it: watch on from rv
    if (absl::IsPermissionDenied(watched) || absl::IsUnauthenticated(watched)) {
      err << "baton leases: " << Describe(watched) << "\n";
      return kLeasesFailed;
    }
    if (absl::IsFailedPrecondition(watched)) {  // rv too old: list again
      absl::StatusOr<kube::LeaseList> again = kube::ListLeases(client, ns);
      if (again.ok()) {
        follower.Resync(again->items);
        rv = std::move(again->resource_version);
        continue;
      }
    }
    err << "baton leases: watch: " << watched.message() << "; watching again in "
        << absl::FormatDuration(options.watch_retry_delay) << "\n";
    clock.SleepUntil(clock.Monotonic() + options.watch_retry_delay);
  }
  return kLeasesFailed;
}

}  // namespace

int RunLeases(const LeasesOptions& options, const Clock& clock, std::ostream& out,
              std::ostream& err) {
  if (absl::Status valid = ValidateLeasesOptions(options); !valid.ok()) {
    err << "baton leases: " << valid.message() << "\n";
    return kLeasesBadUsage;
  }
  absl::StatusOr<kube::RestConfig> config = LoadConfig(options);
  if (!config.ok()) {
    err << "baton leases: " << config.status().message() << "\n";
    return kLeasesFailed;
  }
  const std::string ns = NamespaceToList(options, *config);
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      kube::KubeClient::Create(*std::move(config));
  if (!client.ok()) {
    err << "baton leases: " << client.status().message() << "\n";
    return kLeasesFailed;
  }
  absl::StatusOr<kube::LeaseList> leases = kube::ListLeases(**client, ns);
  if (!leases.ok()) {
    err << "baton leases: " << Describe(leases.status()) << "\n";
    return kLeasesFailed;
  }
  if (leases->items.empty() && options.output != LeasesOutput::kJson) {
    err << (options.all_namespaces ? std::string("no Leases in any namespace")
                                   : absl::StrCat("no Leases in namespace ", ns))
        << "\n";
  }
  out << FormatLeases(options, leases->items, clock.Wall());
  out.flush();
  if (!out.good()) return kLeasesFailed;
  if (options.watch) return Follow(options, clock, **client, ns, *std::move(leases), out, err);
  return kLeasesOk;
}

}  // namespace baton::tools

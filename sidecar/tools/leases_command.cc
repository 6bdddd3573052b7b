#include "sidecar/tools/leases_command.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
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

  baton leases [--namespace=NS | --all-namespaces] [--kubeconfig=PATH] [--output=text|json]

  --namespace=NS      the Leases of NS. Default: the kubeconfig context's namespace,
                      in a Pod the Pod's own, else "default".
  --all-namespaces    the Leases of every namespace; text lines start with <namespace>/.
  --kubeconfig=PATH   the kubeconfig to use. Default: in-cluster config (ServiceAccount
                      token), as for the sidecar.
  --output=text|json  text (default): one line per Lease, sorted; json: every field.

Text output, one line per Lease:
  <name> holder=<holder> transitions=<n> duration=<s>s LIVE|EXPIRED
  holder       spec.holderIdentity; "" after a release (anyone may take it at once)
  transitions  spec.leaseTransitions: takeovers so far, the holder's fencing token
  duration     spec.leaseDurationSeconds: how long the holder promises to keep the
               Lease after each renew

LIVE/EXPIRED is a wall-clock ESTIMATE: renewTime + leaseDurationSeconds compared with
this machine's clock. renewTime comes from the holder's wall clock, so clock skew
between the holder's node and this machine moves the verdict by that skew; treat a
Lease within a few seconds of its expiry as undecided. The sidecar never decides this
way: a candidate takes a Lease over only after leaseDurationSeconds have passed on its
own monotonic clock since it last saw the Lease change, so wall-clock skew between
nodes can never cause a takeover.

Needs the `list` verb on leases (kubectl auth can-i list leases), which the sidecar's
own Role does not grant: run it with an operator's kubeconfig.
Exit status: 0 when the Leases were listed (EXPIRED ones included), 1 on errors,
2 on contradictory flags.
)";

absl::StatusOr<LeasesOutput> ParseLeasesOutput(absl::string_view value) {
  if (value == "text") return LeasesOutput::kText;
  if (value == "json") return LeasesOutput::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--output=", value, " is not supported: use --output=text or --output=json"));
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

std::string FormatText(const LeasesOptions& options, const std::vector<kube::NamedLease>& leases,
                       absl::Time now) {
  std::string out;
  for (const kube::NamedLease& lease : leases) {
    if (options.all_namespaces) absl::StrAppend(&out, lease.namespace_name, "/");
    absl::StrAppend(&out, lease.name, " holder=", LogValue(lease.record.holder_identity),
                    " transitions=", lease.record.lease_transitions,
                    " duration=", lease.record.lease_duration_seconds, "s ",
                    StateName(EstimateLeaseState(lease.record, now)), "\n");
  }
  return out;
}

boost::json::value TimeOrNull(const std::optional<absl::Time>& t) {
  if (!t.has_value()) return nullptr;
  return boost::json::value(kube::FormatMicroTime(*t));
}

std::string FormatJson(const std::vector<kube::NamedLease>& leases, absl::Time now) {
  boost::json::array items;
  for (const kube::NamedLease& lease : leases) {
    const LeaseRecord& r = lease.record;
    items.push_back(boost::json::object{
        {"namespace", lease.namespace_name},
        {"name", lease.name},
        {"holderIdentity", r.holder_identity},
        {"leaseTransitions", r.lease_transitions},
        {"leaseDurationSeconds", r.lease_duration_seconds},
        {"acquireTime", TimeOrNull(r.acquire_time)},
        {"renewTime", TimeOrNull(r.renew_time)},
        {"expiresAt", TimeOrNull(ExpiresAt(r))},
        {"state", StateName(EstimateLeaseState(r, now))},
    });
  }
  boost::json::object doc{{"now", kube::FormatMicroTime(now)}, {"leases", std::move(items)}};
  return boost::json::serialize(doc) + "\n";
}

absl::StatusOr<kube::RestConfig> LoadConfig(const LeasesOptions& options) {
  if (options.kubeconfig.empty()) return kube::LoadInClusterConfig();
  return kube::LoadKubeconfig(options.kubeconfig);
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
                    " (baton leases needs the `list` verb on leases.coordination.k8s.io, which "
                    "the sidecar's own Role does not grant; use an operator's kubeconfig)");
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
  absl::StatusOr<std::vector<kube::NamedLease>> leases = kube::ListLeases(**client, ns);
  if (!leases.ok()) {
    err << "baton leases: " << Describe(leases.status()) << "\n";
    return kLeasesFailed;
  }
  if (leases->empty() && options.output == LeasesOutput::kText) {
    err << (options.all_namespaces ? std::string("no Leases in any namespace")
                                   : absl::StrCat("no Leases in namespace ", ns))
        << "\n";
  }
  out << FormatLeases(options, *std::move(leases), clock.Wall());
  out.flush();
  return out.good() ? kLeasesOk : kLeasesFailed;
}

}  // namespace baton::tools

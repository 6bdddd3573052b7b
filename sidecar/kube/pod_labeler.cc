#include "sidecar/kube/pod_labeler.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "sidecar/common/log.h"
#include "sidecar/kube/lease_json.h"

namespace baton::kube {
namespace {

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// Kubernetes' qualified name: at most 63 of [A-Za-z0-9-_.], alphanumeric at
// both ends.
bool IsLabelName(absl::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A DNS-1123 subdomain: at most 253 of [a-z0-9-.], alphanumeric at both ends
// and around every dot.
bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view part : absl::StrSplit(s, '.')) {
    if (part.empty() || !IsAlnum(part.front()) || !IsAlnum(part.back())) return false;
    for (char c : part) {
      if (!(absl::ascii_islower(static_cast<unsigned char>(c)) ||
            absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '-')) {
        return false;
      }
    }
  }
  return true;
}

// Failures that trying again in a moment will not fix: a Role without the
// verb, a POD_NAME that names no Pod, a patch the API server refuses.
bool FailsForGood(const absl::Status& status) {
  return absl::IsPermissionDenied(status) || absl::IsNotFound(status) ||
         absl::IsInvalidArgument(status);
}

std::string PodsPath(absl::string_view ns) {
  return absl::StrCat("/api/v1/namespaces/", UrlEncode(ns), "/pods");
}

}  // namespace

absl::Status ValidateLabelKey(absl::string_view key) {
  const size_t slash = key.find('/');
  const absl::string_view name = slash == absl::string_view::npos ? key : key.substr(slash + 1);
  if (slash != absl::string_view::npos && !IsDnsSubdomain(key.substr(0, slash))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", key,
        "\" is not a label key: the prefix before / must be a DNS subdomain "
        "(lower-case letters, digits, - and ., at most 253 characters), e.g. baton.dev/leader"));
  }
  if (!IsLabelName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key,
                     "\" is not a label key: the name must be 1 to 63 letters, digits, -, _ "
                     "or ., starting and ending with a letter or digit, e.g. baton.dev/leader"));
  }
  return absl::OkStatus();
}

PodLabeler::PodLabeler(std::unique_ptr<KubeClient> client, PodLabelerOptions options,
                       const Clock* clock)
    : client_(std::move(client)), options_(std::move(options)), clock_(clock) {}

PodLabeler::~PodLabeler() { Stop(clock_->Monotonic()); }

void PodLabeler::Start() {
  worker_ = std::thread([this] { Run(); });
}

void PodLabeler::SetLeading(bool leading) {
  absl::MutexLock lock(&mu_);
  if (leading == leading_) return;
  leading_ = leading;
  ++generation_;
}

void PodLabeler::Stop(MonoTime deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (worker_.joinable()) {
      clock_->AwaitUntil(&mu_, absl::Condition(this, &PodLabeler::SettledLocked), deadline);
    }
    stopped_ = true;
  }
  client_->Cancel();
  if (worker_.joinable()) worker_.join();
}

bool PodLabeler::HasWorkLocked() const { return stopped_ || generation_ != taken_; }

bool PodLabeler::SettledLocked() const {
  return !busy_ && (applied_ == generation_ || failed_for_good_);
}

void PodLabeler::Run() {
  for (;;) {
    bool leading;
    {
      absl::MutexLock lock(&mu_);
      clock_->AwaitUntil(&mu_, absl::Condition(this, &PodLabeler::HasWorkLocked), due_);
      if (stopped_) return;
      taken_ = generation_;
      leading = leading_;
      busy_ = true;
    }
    const absl::Status status = Apply(leading);
    absl::MutexLock lock(&mu_);
    busy_ = false;
    if (status.ok()) {
      applied_ = taken_;
      failed_for_good_ = false;
      due_ = leading ? clock_->Monotonic() + options_.resync : MonoTime::InfiniteFuture();
    } else {
      failed_for_good_ = FailsForGood(status);
      due_ = clock_->Monotonic() + options_.retry;
    }
  }
}

absl::Status PodLabeler::Apply(bool leading) {
  if (leading) {
    if (absl::Status swept = Sweep(); absl::IsPermissionDenied(swept)) {
      // Without `list` on pods there is no sweep to wait for; said once.
      if (!sweep_forbidden_) {
        sweep_forbidden_ = true;
        spdlog::warn(
            "event=leader_label_sweep_forbidden pod={}/{} label={} error={} next=\"label this "
            "Pod without sweeping; grant list on pods to clear a previous leader's label\"",
            options_.pod_namespace, LogValue(options_.pod_name), options_.label_key,
            LogValue(swept.ToString()));
      }
    } else if (!swept.ok()) {
      LogFailure("sweep", swept);
      return swept;
    }
  }
  absl::Status patched = PatchPod(options_.pod_name, leading);
  LogFailure(leading ? "label" : "unlabel", patched);
  if (patched.ok() && labeled_ != leading) {
    labeled_ = leading;
    spdlog::info("event={} pod={}/{} label={} lease={}",
                 leading ? "leader_label_added" : "leader_label_removed", options_.pod_namespace,
                 LogValue(options_.pod_name), options_.label_key, options_.lease);
  }
  return patched;
}

namespace {

// The name of a Pod in a PodList's items that carries the label for
// `lease`; empty for any other item.
std::string PodLabeledFor(const boost::json::value& item, const std::string& lease) {
  const boost::json::object* pod = item.if_object();
  const boost::json::value* metadata = pod != nullptr ? pod->if_contains("metadata") : nullptr;
  if (metadata == nullptr || !metadata->is_object()) return "";
  const boost::json::value* name = metadata->get_object().if_contains("name");
  const boost::json::value* annotations = metadata->get_object().if_contains("annotations");
  const boost::json::value* leader_of =
      annotations != nullptr && annotations->is_object()
          ? annotations->get_object().if_contains(kLeaderOfAnnotation)
          : nullptr;
  if (name == nullptr || !name->is_string() || leader_of == nullptr || !leader_of->is_string() ||
      leader_of->get_string() != lease) {
    return "";
  }
  return std::string(name->get_string());
}

}  // namespace

absl::Status PodLabeler::Sweep() {
  const absl::StatusOr<boost::json::value> list = client_->Call(
      ApiVerb::kList, absl::StrCat(PodsPath(options_.pod_namespace), "?labelSelector=",
                                   UrlEncode(absl::StrCat(options_.label_key, "=true"))));
  if (!list.ok()) return list.status();
  const boost::json::object* object = list->if_object();
  const boost::json::value* items = object == nullptr ? nullptr : object->if_contains("items");
  if (items == nullptr || !items->is_array()) {
    return absl::InternalError("malformed PodList from the API server: no items");
  }
  for (const boost::json::value& item : items->get_array()) {
    const std::string pod = PodLabeledFor(item, options_.lease);
    if (pod.empty() || pod == options_.pod_name) continue;
    absl::Status removed = PatchPod(pod, false);
    // A Pod deleted meanwhile carries no label.
    if (absl::IsNotFound(removed)) continue;
    if (!removed.ok()) return removed;
    spdlog::info("event=leader_label_removed pod={}/{} label={} lease={} reason=stale",
                 options_.pod_namespace, LogValue(pod), options_.label_key, options_.lease);
  }
  return absl::OkStatus();
}

absl::Status PodLabeler::PatchPod(absl::string_view name, bool label) {
  // JSON merge patch: null removes a key.
  const boost::json::value value = label ? boost::json::value("true") : nullptr;
  const boost::json::value lease = label ? boost::json::value(options_.lease) : nullptr;
  const boost::json::object patch{
      {"metadata",
       boost::json::object{{"labels", boost::json::object{{options_.label_key, value}}},
                           {"annotations", boost::json::object{{kLeaderOfAnnotation, lease}}}}}};
  return client_
      ->Call(ApiVerb::kPatch, absl::StrCat(PodsPath(options_.pod_namespace), "/", UrlEncode(name)),
             boost::json::serialize(patch))
      .status();
}

void PodLabeler::LogFailure(const char* what, const absl::Status& status) {
  if (status.ok()) {
    if (!failing_.empty()) {
      spdlog::info("event=leader_label_recovered pod={}/{} label={}", options_.pod_namespace,
                   LogValue(options_.pod_name), options_.label_key);
    }
    failing_.clear();
    return;
  }
  if (failing_ == what || absl::IsCancelled(status)) return;
  failing_ = what;
  const char* next = absl::IsPermissionDenied(status)
                         ? "retry; grant patch on pods for the leader label"
                     : absl::IsNotFound(status) ? "retry; POD_NAME must name this Pod"
                                                : "retry";
  spdlog::warn("event=leader_label_failed pod={}/{} label={} step={} error={} next=\"{}\"",
               options_.pod_namespace, LogValue(options_.pod_name), options_.label_key, what,
               LogValue(status.ToString()), next);
}

}  // namespace baton::kube

#include "sidecar/kube/pod_status.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "sidecar/kube/api_errors.h"

namespace baton::kube {
namespace {

const boost::json::value* Field(const boost::json::value& v, std::string_view key) {
  const boost::json::object* object = v.if_object();
  return object == nullptr ? nullptr : object->if_contains(key);
}

}  // namespace

absl::Status AppContainersExited(const boost::json::value& pod) {
  const boost::json::value* spec = Field(pod, "spec");
  const boost::json::value* containers = spec ? Field(*spec, "containers") : nullptr;
  if (containers == nullptr || !containers->is_array() || containers->as_array().empty()) {
    return absl::InvalidArgumentError("not a Pod: no spec.containers");
  }
  const boost::json::value* status = Field(pod, "status");
  const boost::json::value* statuses = status ? Field(*status, "containerStatuses") : nullptr;
  for (const boost::json::value& container : containers->as_array()) {
    const boost::json::value* name = Field(container, "name");
    if (name == nullptr || !name->is_string()) {
      return absl::InvalidArgumentError("not a Pod: a container without a name");
    }
    bool terminated = false;
    if (statuses != nullptr && statuses->is_array()) {
      for (const boost::json::value& s : statuses->as_array()) {
        const boost::json::value* state = Field(s, "state");
        const boost::json::value* s_name = Field(s, "name");
        if (s_name != nullptr && *s_name == *name && state != nullptr) {
          terminated = Field(*state, "terminated") != nullptr;
        }
      }
    }
    if (!terminated) {
      return absl::FailedPreconditionError(absl::StrCat(
          "container ", absl::string_view(name->as_string().data(), name->as_string().size()),
          " has not terminated"));
    }
  }
  return absl::OkStatus();
}

absl::Status AppContainersExited(KubeClient& client, const std::string& pod_namespace,
                                 const std::string& pod_name) {
  absl::StatusOr<boost::json::value> pod = client.Call(
      ApiVerb::kGet, absl::StrCat("/api/v1/namespaces/", pod_namespace, "/pods/", pod_name));
  if (!pod.ok()) return pod.status();
  return AppContainersExited(*pod);
}

}  // namespace baton::kube

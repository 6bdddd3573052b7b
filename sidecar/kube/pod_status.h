// Whether the application containers of this sidecar's own Pod have exited,
// read from the Pod's status (--native-sidecar).
//
// A native sidecar (an init container with restartPolicy: Always) is stopped
// by the kubelet only after every regular container of its Pod has exited.
// baton does not take that for granted: on SIGTERM it reads its Pod and
// believes it only if the status says so, container by container.
#ifndef BATON_SIDECAR_KUBE_POD_STATUS_H_
#define BATON_SIDECAR_KUBE_POD_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boost/json/value.hpp"
#include "sidecar/kube/kube_client.h"

namespace baton::kube {

// OK if every container in the Pod's spec.containers (its application
// containers; native sidecars are init containers) has a status whose state
// is `terminated`; otherwise FailedPrecondition naming the first that has
// not (or has no status yet). InvalidArgument if `pod` is not a Pod object.
absl::Status AppContainersExited(const boost::json::value& pod);

// Reads Pod `pod_namespace`/`pod_name` and applies AppContainersExited; the
// read's error (e.g. PermissionDenied without get on pods) otherwise.
absl::Status AppContainersExited(KubeClient& client, const std::string& pod_namespace,
                                 const std::string& pod_name);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_POD_STATUS_H_

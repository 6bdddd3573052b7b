// The one table that turns an API server answer into an absl::Status.
//
// Codes follow the LeaseStore contract (sidecar/election/lease_store.h):
//   2xx         OK
//   400, 422    InvalidArgument
//   401         Unauthenticated
//   403         PermissionDenied
//   404         NotFound
//   405         Unimplemented
//   408         DeadlineExceeded
//   409         AlreadyExists for a create, Aborted otherwise (stale resourceVersion)
//   410         FailedPrecondition (watch resourceVersion too old)
//   429, 5xx    Unavailable; Retry-After is attached (see RetryAfter())
//   other       Unknown
// Transport failures are mapped where they happen (https_client.h):
// connection and TLS failures Unavailable, deadline DeadlineExceeded.
//
// The message keeps the server's Status.reason and Status.message, e.g.
//   PUT /apis/.../leases/x: HTTP 409, reason=Conflict: Operation cannot be ...
//
// Pure functions; thread-safe.
#ifndef BATON_SIDECAR_KUBE_API_ERRORS_H_
#define BATON_SIDECAR_KUBE_API_ERRORS_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace baton::kube {

// The Kubernetes verb of a request. It decides what a 409 means, and it is
// what request observers (metrics) are told.
enum class ApiVerb { kGet, kList, kWatch, kCreate, kUpdate, kPatch };

// "get", "list", "watch", "create", "update", "patch".
absl::string_view ApiVerbName(ApiVerb verb);

// The status code for an HTTP answer to `verb` (the table above).
absl::StatusCode CodeForHttpStatus(ApiVerb verb, int http_status);

// Builds the status for an answer. `body` is the response body, normally a
// Kubernetes Status object whose reason and message are kept; any other body
// is quoted (shortened). `retry_after` is the Retry-After header value (may be
// empty); when it or the Status's details.retryAfterSeconds says how long to
// wait, the duration is attached for RetryAfter(). `request` names what was
// asked, e.g. "PUT /apis/...". OK for 2xx.
absl::Status StatusFromResponse(ApiVerb verb, absl::string_view request, int http_status,
                                absl::string_view body, absl::string_view retry_after = "");

// How long the server asked the client to wait before retrying, if it said.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

// Attaches a Retry-After duration to `status` (used by StatusFromResponse).
void SetRetryAfter(absl::Status& status, absl::Duration wait);

}  // namespace baton::kube

#endif  // BATON_SIDECAR_KUBE_API_ERRORS_H_

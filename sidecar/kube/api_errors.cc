#include "sidecar/kube/api_errors.h"

#include <cstdint>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "boost/json.hpp"
#include "sidecar/kube/string_views.h"

namespace baton::kube {
namespace {

constexpr char kRetryAfterUrl[] = "type.baton.dev/kube.RetryAfterMillis";
constexpr size_t kMaxQuotedBody = 256;

// The parts of a metav1.Status body we keep.
struct ServerStatus {
  std::string reason;
  std::string message;
  std::optional<int64_t> retry_after_seconds;
};

std::optional<ServerStatus> ParseServerStatus(absl::string_view body) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(ToBoost(body), ec);
  const boost::json::object* obj = ec ? nullptr : v.if_object();
  if (obj == nullptr) return std::nullopt;
  const boost::json::value* kind = obj->if_contains("kind");
  if (kind == nullptr || !kind->is_string() || kind->get_string() != "Status") return std::nullopt;
  ServerStatus out;
  if (const auto* r = obj->if_contains("reason"); r != nullptr && r->is_string()) {
    out.reason = r->get_string();
  }
  if (const auto* m = obj->if_contains("message"); m != nullptr && m->is_string()) {
    out.message = m->get_string();
  }
  if (const auto* d = obj->if_contains("details"); d != nullptr && d->is_object()) {
    if (const auto* r = d->get_object().if_contains("retryAfterSeconds");
        r != nullptr && r->is_int64()) {
      out.retry_after_seconds = r->get_int64();
    }
  }
  return out;
}

// A short, single-line rendering of a body that is not a Status object.
std::string QuoteBody(absl::string_view body) {
  std::string out;
  for (char c : body.substr(0, kMaxQuotedBody)) {
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  if (body.size() > kMaxQuotedBody) out += "...";
  return absl::StrCat("\"", out, "\"");
}

}  // namespace

absl::string_view ApiVerbName(ApiVerb verb) {
  switch (verb) {
    case ApiVerb::kGet:
      return "get";
    case ApiVerb::kList:
      return "list";
    case ApiVerb::kWatch:
      return "watch";
    case ApiVerb::kCreate:
      return "create";
    case ApiVerb::kUpdate:
      return "update";
    case ApiVerb::kPatch:
      return "patch";
  }
  return "unknown";
}

absl::StatusCode CodeForHttpStatus(ApiVerb verb, int http_status) {
  if (http_status >= 200 && http_status < 300) return absl::StatusCode::kOk;
  if (http_status >= 500 && http_status < 600) return absl::StatusCode::kUnavailable;
  switch (http_status) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 408:
      return absl::StatusCode::kDeadlineExceeded;
    case 409:
      return verb == ApiVerb::kCreate ? absl::StatusCode::kAlreadyExists
                                      : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kFailedPrecondition;
    case 429:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kUnknown;
  }
}

absl::Status StatusFromResponse(ApiVerb verb, absl::string_view request, int http_status,
                                absl::string_view body, absl::string_view retry_after) {
  const absl::StatusCode code = CodeForHttpStatus(verb, http_status);
  if (code == absl::StatusCode::kOk) return absl::OkStatus();

  std::string message = absl::StrCat(request, ": HTTP ", http_status);
  std::optional<int64_t> wait_seconds;
  if (std::optional<ServerStatus> s = ParseServerStatus(body)) {
    if (!s->reason.empty()) absl::StrAppend(&message, ", reason=", s->reason);
    if (!s->message.empty()) absl::StrAppend(&message, ": ", s->message);
    wait_seconds = s->retry_after_seconds;
  } else if (!body.empty()) {
    absl::StrAppend(&message, ": ", QuoteBody(body));
  }
  // The header wins over the body: it is what proxies and priority-and-fairness set.
  if (int64_t seconds = 0; absl::SimpleAtoi(absl::StripAsciiWhitespace(retry_after), &seconds)) {
    wait_seconds = seconds;
  }
  absl::Status status(code, message);
  if (wait_seconds.has_value() && *wait_seconds >= 0) {
    SetRetryAfter(status, absl::Seconds(*wait_seconds));
  }
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kRetryAfterUrl);
  int64_t millis = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &millis)) {
    return std::nullopt;
  }
  return absl::Milliseconds(millis);
}

void SetRetryAfter(absl::Status& status, absl::Duration wait) {
  status.SetPayload(kRetryAfterUrl, absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(wait))));
}

}  // namespace baton::kube

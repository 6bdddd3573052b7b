#include "sidecar/kube/api_errors.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::kube {
namespace {

using ::testing::HasSubstr;

struct Row {
  ApiVerb verb;
  int http;
  absl::StatusCode code;
};

TEST(ApiErrorsTest, TableMapsEveryAnswer) {
  const Row rows[] = {
      {ApiVerb::kGet, 200, absl::StatusCode::kOk},
      {ApiVerb::kCreate, 201, absl::StatusCode::kOk},
      {ApiVerb::kGet, 400, absl::StatusCode::kInvalidArgument},
      {ApiVerb::kUpdate, 422, absl::StatusCode::kInvalidArgument},
      {ApiVerb::kGet, 401, absl::StatusCode::kUnauthenticated},
      {ApiVerb::kWatch, 403, absl::StatusCode::kPermissionDenied},
      {ApiVerb::kGet, 404, absl::StatusCode::kNotFound},
      {ApiVerb::kUpdate, 404, absl::StatusCode::kNotFound},
      {ApiVerb::kGet, 405, absl::StatusCode::kUnimplemented},
      {ApiVerb::kGet, 408, absl::StatusCode::kDeadlineExceeded},
      {ApiVerb::kCreate, 409, absl::StatusCode::kAlreadyExists},
      {ApiVerb::kUpdate, 409, absl::StatusCode::kAborted},
      {ApiVerb::kWatch, 410, absl::StatusCode::kFailedPrecondition},
      {ApiVerb::kGet, 429, absl::StatusCode::kUnavailable},
      {ApiVerb::kUpdate, 500, absl::StatusCode::kUnavailable},
      {ApiVerb::kGet, 503, absl::StatusCode::kUnavailable},
      {ApiVerb::kGet, 504, absl::StatusCode::kUnavailable},
      {ApiVerb::kGet, 302, absl::StatusCode::kUnknown},
      {ApiVerb::kGet, 418, absl::StatusCode::kUnknown},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(CodeForHttpStatus(row.verb, row.http), row.code)
        << ApiVerbName(row.verb) << " " << row.http;
    EXPECT_EQ(StatusFromResponse(row.verb, "GET /x", row.http, "").code(), row.code);
  }
}

TEST(ApiErrorsTest, KeepsServerReasonAndMessage) {
  const absl::Status s = StatusFromResponse(
      ApiVerb::kUpdate, "PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/x", 409,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict",)"
      R"("message":"Operation cannot be fulfilled on leases.coordination.k8s.io \"x\": the )"
      R"(object has been modified","code":409})");
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(),
            "PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/x: HTTP 409, reason=Conflict: "
            "Operation cannot be fulfilled on leases.coordination.k8s.io \"x\": the object has "
            "been modified");
}

TEST(ApiErrorsTest, QuotesAndShortensANonStatusBody) {
  const std::string html = "<html>\n<body>bad gateway</body>" + std::string(1000, 'x');
  const absl::Status s = StatusFromResponse(ApiVerb::kGet, "GET /x", 502, html);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("\"<html> <body>bad gateway</body>x"));
  EXPECT_LT(s.message().size(), 400u);
}

TEST(ApiErrorsTest, RetryAfterFromHeader) {
  const absl::Status s = StatusFromResponse(ApiVerb::kGet, "GET /x", 429, "", "7");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(RetryAfter(s), absl::Seconds(7));
}

TEST(ApiErrorsTest, RetryAfterFromStatusDetails) {
  const absl::Status s = StatusFromResponse(
      ApiVerb::kGet, "GET /x", 429,
      R"({"kind":"Status","reason":"TooManyRequests","details":{"retryAfterSeconds":3}})");
  EXPECT_EQ(RetryAfter(s), absl::Seconds(3));
  EXPECT_THAT(std::string(s.message()), HasSubstr("reason=TooManyRequests"));
}

TEST(ApiErrorsTest, HeaderWinsOverDetails) {
  const absl::Status s =
      StatusFromResponse(ApiVerb::kGet, "GET /x", 503,
                         R"({"kind":"Status","details":{"retryAfterSeconds":3}})", " 10 ");
  EXPECT_EQ(RetryAfter(s), absl::Seconds(10));
}

TEST(ApiErrorsTest, NoRetryAfterUnlessTold) {
  EXPECT_EQ(RetryAfter(StatusFromResponse(ApiVerb::kGet, "GET /x", 503, "")), std::nullopt);
  // An HTTP-date Retry-After is not understood; no duration rather than a wrong one.
  EXPECT_EQ(RetryAfter(StatusFromResponse(ApiVerb::kGet, "GET /x", 503, "",
                                          "Wed, 21 Oct 2026 07:28:00 GMT")),
            std::nullopt);
  EXPECT_EQ(RetryAfter(absl::UnavailableError("x")), std::nullopt);
}

}  // namespace
}  // namespace baton::kube

// The conformance suite's vector files (clients/conformance/vectors), each
// case checked through the client's pure functions (src/internal.h) with the
// vectors' clock readings; a scenario is reported once every case passed.
#include "conformance.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "baton/client/client.h"
#include "baton/client/fence.h"
#include "baton/v1/leader_election.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/support/status.h"
#include "gtest/gtest.h"
#include "internal.h"

// clients/conformance/vectors (conformance_vectors.cc, made by CMake).
extern const char kBatonConformanceVectors[];

namespace baton::client {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

Struct LoadVectors(const std::string& name) {
  const std::string path = absl::StrCat(kBatonConformanceVectors, "/", name);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Struct file;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(text.str(), &file).ok()) << path;
  return file;
}

const google::protobuf::RepeatedPtrField<Value>& Rows(const Struct& file, const std::string& key) {
  return file.fields().at(key).list_value().values();
}

const Value& Field(const Value& row, const std::string& key) {
  return row.struct_value().fields().at(key);
}

bool Has(const Value& row, const std::string& key) {
  return row.struct_value().fields().contains(key);
}

std::string Name(const Value& row) { return Field(row, "name").string_value(); }

// A vector's value as text: numbers as integers, strings as they are.
std::string Text(const Value& v) {
  switch (v.kind_case()) {
    case Value::kNullValue:
      return "null";
    case Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    case Value::kNumberValue:
      return absl::StrCat(static_cast<int64_t>(v.number_value()));
    case Value::kStringValue:
      return v.string_value();
    default:
      return "?";
  }
}

BootClock::time_point Ms(const Value& v) {
  return BootClock::time_point(std::chrono::milliseconds(static_cast<int64_t>(v.number_value())));
}

int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

// `l` in the vectors' form of an expected Leadership, every value as Text.
std::map<std::string, std::string> AsExpected(const Leadership& l) {
  auto unix_ms = [](const std::optional<absl::Time>& t) {
    return t.has_value() ? absl::StrCat(absl::ToUnixMillis(*t)) : std::string("null");
  };
  auto boot_ms = [](BootClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  return {
      {"isLeader", l.is_leader ? "true" : "false"},
      {"observed", l.observed ? "true" : "false"},
      {"steppingDown", l.stepping_down ? "true" : "false"},
      {"identity", l.identity},
      {"holderIdentity", l.holder_identity},
      {"leaseName", l.lease_name},
      {"leaseNamespace", l.lease_namespace},
      {"leaseUid", l.lease_uid},
      {"fencingToken", absl::StrCat(l.fencing_token)},
      {"fencingRevision", FormatRevision(l.fencing_revision)},
      {"acquireTimeUnixMs", unix_ms(l.acquire_time)},
      {"renewTimeUnixMs", unix_ms(l.renew_time)},
      {"validForMs", absl::StrCat(Ms(l.valid_for))},
      {"validUntilBoottimeMs", absl::StrCat(boot_ms(l.valid_until))},
      {"leaseDurationMs", absl::StrCat(Ms(l.lease_duration.value_or(absl::ZeroDuration())))},
  };
}

// Compares a conversion's outcome with a case's "expect".
void ExpectLeadership(const absl::StatusOr<Leadership>& got, const Value& expect) {
  const auto& fields = expect.struct_value().fields();
  if (fields.contains("error")) {
    EXPECT_FALSE(got.ok()) << "converted; want an error";
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status();
  std::map<std::string, std::string> want;
  for (const auto& [key, value] : fields) want[key] = Text(value);
  EXPECT_EQ(AsExpected(*got), want);
}

TEST(ConformanceTest, LeadershipJson) {
  const Struct file = LoadVectors("leadership_json.json");
  for (const Value& c : Rows(file, "cases")) {
    SCOPED_TRACE(Name(c));
    ExpectLeadership(
        internal::ParseLeadershipJson(Field(c, "text").string_value(), Ms(Field(c, "sinceMs"))),
        Field(c, "expect"));
  }
  conformance::Passed("leadership-json");
}

TEST(ConformanceTest, LeadershipProto) {
  const Struct file = LoadVectors("leadership_proto.json");
  for (const Value& c : Rows(file, "cases")) {
    SCOPED_TRACE(Name(c));
    std::string wire;
    ASSERT_TRUE(absl::Base64Unescape(Field(c, "base64").string_value(), &wire));
    v1::Leadership m;
    absl::StatusOr<Leadership> got = absl::InvalidArgumentError("does not parse");
    if (m.ParseFromString(wire)) got = internal::FromProto(m, Ms(Field(c, "sinceMs")));
    ExpectLeadership(got, Field(c, "expect"));
  }
  conformance::Passed("leadership-proto");
}

TEST(ConformanceTest, Validity) {
  const Struct file = LoadVectors("validity.json");
  for (const Value& c : Rows(file, "cases")) {
    SCOPED_TRACE(Name(c));
    const absl::StatusOr<Leadership> l =
        internal::ParseLeadershipJson(Field(c, "text").string_value(), Ms(Field(c, "sinceMs")));
    ASSERT_TRUE(l.ok()) << l.status();
    for (const Value& check : Field(c, "checks").list_value().values()) {
      EXPECT_EQ(Ms(internal::RemainingAt(*l, Ms(Field(check, "nowMs")))),
                static_cast<int64_t>(Field(check, "remainingMs").number_value()))
          << "at " << Text(Field(check, "nowMs")) << "ms";
    }
  }
  conformance::Passed("validity");
}

TEST(ConformanceTest, RequireLeader) {
  const Struct file = LoadVectors("require_leader.json");
  for (const Value& c : Rows(file, "cases")) {
    SCOPED_TRACE(Name(c));
    const absl::StatusOr<Leadership> l =
        internal::ParseLeadershipJson(Field(c, "text").string_value(), Ms(Field(c, "sinceMs")));
    ASSERT_TRUE(l.ok()) << l.status();
    const absl::Duration min_validity =
        absl::Milliseconds(Field(c, "minValidityMs").number_value());
    EXPECT_EQ(absl::Trunc(internal::RequireLeaderBound(min_validity), absl::Milliseconds(1)),
              absl::Milliseconds(Field(c, "requestMaxValidForMs").number_value()))
        << "max_valid_for";
    const absl::StatusOr<int32_t> token =
        internal::RequireLeaderAt(*l, min_validity, Ms(Field(c, "nowMs")));
    const Value& expect = Field(c, "expect");
    if (Has(expect, "notLeader")) {
      EXPECT_TRUE(IsNotLeader(token.status())) << token.status();
    } else {
      ASSERT_TRUE(token.ok()) << token.status();
      EXPECT_EQ(absl::StrCat(*token), Text(Field(expect, "token")));
      EXPECT_EQ(FormatRevision(l->fencing_revision), Text(Field(expect, "revision")));
    }
  }
  conformance::Passed("require-leader");
}

// Token steps are JSON numbers, revision steps decimal strings.
absl::uint128 Integer(const Value& v) {
  absl::uint128 n = 0;
  if (v.has_string_value()) {
    EXPECT_TRUE(absl::SimpleAtoi(v.string_value(), &n)) << v.string_value();
    return n;
  }
  return static_cast<uint64_t>(v.number_value());
}

TEST(ConformanceTest, Fence) {
  const Struct file = LoadVectors("fence.json");
  for (const Value& c : Rows(file, "cases")) {
    SCOPED_TRACE(Name(c));
    Fence fence;  // one class for tokens and revisions, compared as integers
    for (const Value& step : Field(c, "steps").list_value().values()) {
      const absl::uint128 value = Integer(Field(step, "admit"));
      const absl::Status admitted = fence.Admit(value);
      EXPECT_EQ(admitted.ok(), Field(step, "ok").bool_value()) << value << ": " << admitted;
      if (!admitted.ok()) {
        EXPECT_EQ(admitted.code(), absl::StatusCode::kAborted);
      }
      EXPECT_EQ(fence.Highest(), Integer(Field(step, "highest"))) << value;
    }
  }
  conformance::Passed("fence");
}

// The C++ client reads no HTTP headers itself: it parses their text. A
// missing header (null) reads as an empty one. A "format" case's value is
// written with absl::StrCat (a token) or FormatRevision (a revision).
TEST(ConformanceTest, FenceHeaders) {
  const Struct file = LoadVectors("fence_headers.json");
  EXPECT_EQ(file.fields().at("tokenHeader").string_value(), kTokenHeader);
  EXPECT_EQ(file.fields().at("revisionHeader").string_value(), kRevisionHeader);
  for (const Value& c : Rows(file, "cases")) {
    SCOPED_TRACE(Name(c));
    const bool token = Field(c, "kind").string_value() == "token";
    auto parse = [token](const std::string& text) -> absl::StatusOr<absl::uint128> {
      if (token) {
        absl::StatusOr<int32_t> t = ParseToken(text);
        if (!t.ok()) return t.status();
        return *t;
      }
      return ParseRevision(text);
    };
    if (Has(c, "format")) {
      const absl::uint128 value = Integer(Field(c, "format"));
      EXPECT_EQ(token ? absl::StrCat(static_cast<int32_t>(value)) : FormatRevision(value),
                Text(Field(c, "expect")));
      continue;
    }
    const Value& header = Field(c, "header");
    const absl::StatusOr<absl::uint128> parsed =
        parse(header.has_null_value() ? "" : header.string_value());
    if (Text(Field(c, "expect")) == "error") {
      EXPECT_FALSE(parsed.ok()) << *parsed;
      if (!parsed.ok()) {
        EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
      }
    } else {
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(FormatRevision(*parsed), Text(Field(c, "expect")));
    }
  }
  conformance::Passed("fence-headers");
}

// The C++ client speaks gRPC only, so errors.json's "http" rows (outcomes of
// GET /leader) have nothing to map here; ParseLeadershipJson takes a body the
// application already fetched.
TEST(ConformanceTest, Errors) {
  const Struct file = LoadVectors("errors.json");
  const std::map<std::string, grpc::StatusCode> codes = {
      {"CANCELLED", grpc::StatusCode::CANCELLED},
      {"UNKNOWN", grpc::StatusCode::UNKNOWN},
      {"INVALID_ARGUMENT", grpc::StatusCode::INVALID_ARGUMENT},
      {"DEADLINE_EXCEEDED", grpc::StatusCode::DEADLINE_EXCEEDED},
      {"NOT_FOUND", grpc::StatusCode::NOT_FOUND},
      {"ALREADY_EXISTS", grpc::StatusCode::ALREADY_EXISTS},
      {"PERMISSION_DENIED", grpc::StatusCode::PERMISSION_DENIED},
      {"RESOURCE_EXHAUSTED", grpc::StatusCode::RESOURCE_EXHAUSTED},
      {"FAILED_PRECONDITION", grpc::StatusCode::FAILED_PRECONDITION},
      {"ABORTED", grpc::StatusCode::ABORTED},
      {"OUT_OF_RANGE", grpc::StatusCode::OUT_OF_RANGE},
      {"UNIMPLEMENTED", grpc::StatusCode::UNIMPLEMENTED},
      {"INTERNAL", grpc::StatusCode::INTERNAL},
      {"UNAVAILABLE", grpc::StatusCode::UNAVAILABLE},
      {"DATA_LOSS", grpc::StatusCode::DATA_LOSS},
      {"UNAUTHENTICATED", grpc::StatusCode::UNAUTHENTICATED},
  };
  for (const Value& row : Rows(file, "grpc")) {
    const std::string name = Field(row, "code").string_value();
    SCOPED_TRACE(name);
    ASSERT_TRUE(codes.contains(name));
    const grpc::StatusCode code = codes.at(name);
    const absl::Status status =
        internal::Translate("127.0.0.1:4041", grpc::Status(code, "from the vector"));
    if (Field(row, "error").string_value() == "unavailable") {
      EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    } else {
      EXPECT_EQ(static_cast<int>(status.code()), static_cast<int>(code)) << status;
    }
  }
  conformance::Passed("errors");
}

}  // namespace
}  // namespace baton::client

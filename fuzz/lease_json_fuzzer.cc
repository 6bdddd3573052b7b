// A Lease object as the API server (or anything that can write Leases) might
// send it: decoded as baton decodes it, and what decodes must re-encode — as
// an update writes it back onto the object it read — to JSON that decodes to
// the same record, with times the API server's MicroTime parser accepts.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fuzz/fuzz_check.h"
#include "fuzz/go_micro_time.h"
#include "sidecar/kube/lease_json.h"

namespace {

using baton::LeaseRecord;

// What the API server keeps of a time: microseconds (FormatMicroTime truncates).
std::optional<absl::Time> ToMicros(const std::optional<absl::Time>& t) {
  if (!t) return std::nullopt;
  return absl::FromUnixMicros(absl::ToUnixMicros(*t));
}

void CheckTime(const boost::json::object& spec, const char* key, bool present) {
  const boost::json::value* v = spec.if_contains(key);
  FUZZ_CHECK((v != nullptr) == present);
  if (v != nullptr) {
    FUZZ_CHECK(v->is_string());
    FUZZ_CHECK(baton::fuzz::IsGoMicroTime({v->get_string().data(), v->get_string().size()}));
  }
}

// Writes `record` onto `lease` and reads it back. metadata.uid is the
// server's: ApplyLeaseRecord leaves it as `lease` has it.
void CheckRoundTrip(const LeaseRecord& record, boost::json::object lease) {
  const std::string uid = baton::kube::LeaseMetadataString(lease, "uid");
  baton::kube::ApplyLeaseRecord(record, lease);
  const std::string wire = boost::json::serialize(lease);
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(wire, ec);
  FUZZ_CHECK(!ec && parsed.is_object());
  const boost::json::object& spec = parsed.as_object().at("spec").as_object();
  CheckTime(spec, "acquireTime", record.acquire_time.has_value());
  CheckTime(spec, "renewTime", record.renew_time.has_value());

  absl::StatusOr<LeaseRecord> again = baton::kube::LeaseRecordFromJson(parsed.as_object());
  FUZZ_CHECK(again.ok());
  LeaseRecord expected = record;
  expected.acquire_time = ToMicros(record.acquire_time);
  expected.renew_time = ToMicros(record.renew_time);
  expected.uid = uid;
  FUZZ_CHECK(*again == expected);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  boost::system::error_code ec;
  boost::json::value value =
      boost::json::parse(boost::json::string_view(reinterpret_cast<const char*>(data), size), ec);
  if (ec || !value.is_object()) return 0;
  // Only what a JSON encoder can send: Go's never writes a non-finite number
  // (-1e999 parses as -inf) or a lone surrogate (\udc00), which Boost.JSON
  // accepts but cannot write back.
  if (boost::json::parse(boost::json::serialize(value), ec) != value || ec) return 0;
  const boost::json::object& lease = value.as_object();
  absl::StatusOr<LeaseRecord> record = baton::kube::LeaseRecordFromJson(lease);
  if (!record.ok()) return 0;
  CheckRoundTrip(*record, lease);
  CheckRoundTrip(*record, baton::kube::NewLeaseObject("ns", "name"));
  return 0;
}

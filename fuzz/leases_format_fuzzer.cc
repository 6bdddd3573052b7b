// The `baton leases` formatter over Leases whose fields come from whoever
// wrote them (holderIdentity is any string; times any the parser accepts).
// Text: exactly one line per Lease, and no control characters that could
// forge or hide a line on the operator's terminal. JSON: one document that
// parses, one item per Lease, every time in the API server's format.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "boost/json/parse.hpp"
#include "fuzz/fuzz_check.h"
#include "fuzz/go_micro_time.h"
#include "sidecar/tools/leases_command.h"

namespace {

// The instants ParseMicroTime can return: years 0000 to 9999 (UTC).
absl::Time ConsumeTime(FuzzedDataProvider& input) {
  static const int64_t kMin =
      absl::ToUnixMicros(absl::FromCivil(absl::CivilSecond(0, 1, 1), absl::UTCTimeZone()));
  static const int64_t kMax =
      absl::ToUnixMicros(absl::FromCivil(absl::CivilSecond(10000, 1, 1), absl::UTCTimeZone())) - 1;
  return absl::FromUnixMicros(input.ConsumeIntegralInRange<int64_t>(kMin, kMax));
}

// A Kubernetes object name (DNS-1123), as the API server enforces.
std::string ConsumeName(FuzzedDataProvider& input) {
  std::string name = input.ConsumeRandomLengthString(63);
  for (char& c : name) c = "abcdefghijklmnopqrstuvwxyz0123456789-."[static_cast<uint8_t>(c) % 38];
  return name.empty() ? "x" : name;
}

// Any string a Lease can hold (JSON strings decode to valid UTF-8): each
// byte below 0x80 as itself, control characters included, the others as
// two-byte characters.
std::string ConsumeUtf8(FuzzedDataProvider& input) {
  std::string out;
  for (char c : input.ConsumeRandomLengthString(128)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      out += c;
    } else {
      out += static_cast<char>(0xc0 | (u >> 6));
      out += static_cast<char>(0x80 | (u & 0x3f));
    }
  }
  return out;
}

void CheckTimeField(const boost::json::object& item, const char* key) {
  const boost::json::value& v = item.at(key);
  if (v.is_null()) return;
  FUZZ_CHECK(v.is_string());
  FUZZ_CHECK(baton::fuzz::IsGoMicroTime({v.get_string().data(), v.get_string().size()}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  baton::tools::LeasesOptions options;
  options.all_namespaces = input.ConsumeBool();
  options.output =
      input.ConsumeBool() ? baton::tools::LeasesOutput::kJson : baton::tools::LeasesOutput::kText;
  const absl::Time now = ConsumeTime(input);
  std::vector<baton::kube::NamedLease> leases(input.ConsumeIntegralInRange<size_t>(0, 8));
  for (baton::kube::NamedLease& lease : leases) {
    lease.namespace_name = ConsumeName(input);
    lease.name = ConsumeName(input);
    baton::LeaseRecord& r = lease.record;
    r.holder_identity = ConsumeUtf8(input);
    r.lease_transitions = input.ConsumeIntegral<int32_t>();
    r.lease_duration_seconds = input.ConsumeIntegral<int32_t>();
    if (input.ConsumeBool()) r.acquire_time = ConsumeTime(input);
    if (input.ConsumeBool()) r.renew_time = ConsumeTime(input);
  }

  const std::string out = baton::tools::FormatLeases(options, leases, now);
  if (options.output == baton::tools::LeasesOutput::kText) {
    size_t lines = 0;
    for (char c : out) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '\n') {
        ++lines;
      } else {
        FUZZ_CHECK(u >= 0x20 && u != 0x7f);
      }
    }
    FUZZ_CHECK(lines == leases.size());
    FUZZ_CHECK(out.empty() || out.back() == '\n');
    return 0;
  }
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(out, ec);
  FUZZ_CHECK(!ec && doc.is_object());
  FUZZ_CHECK(doc.at("leases").as_array().size() == leases.size());
  FUZZ_CHECK(baton::fuzz::IsGoMicroTime(
      {doc.at("now").as_string().data(), doc.at("now").as_string().size()}));
  for (const boost::json::value& item : doc.at("leases").as_array()) {
    for (const char* key : {"acquireTime", "renewTime", "expiresAt"}) {
      CheckTimeField(item.as_object(), key);
    }
  }
  return 0;
}

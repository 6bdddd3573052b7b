#include "sidecar/common/log.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace baton {

void InitLogging(spdlog::level::level_enum level) {
  auto logger = spdlog::stderr_logger_mt("baton");
  // %E is seconds since epoch; we want RFC 3339 UTC with microseconds.
  logger->set_pattern("ts=%Y-%m-%dT%H:%M:%S.%fZ level=%l %v", spdlog::pattern_time_type::utc);
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

std::string LogValue(std::string_view v) {
  auto is_control = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  };
  auto plain = [&](char c) { return c != ' ' && c != '"' && c != '=' && !is_control(c); };
  if (!v.empty() && std::all_of(v.begin(), v.end(), plain)) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    switch (c) {
      case '"':
      case '\\':
        out += '\\';
        out += c;
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (is_control(c)) {
          absl::StrAppend(&out, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace baton

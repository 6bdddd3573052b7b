#include "sidecar/common/log.h"

#include <memory>

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
  if (!v.empty() && v.find_first_of(" \"=\t\n") == std::string_view::npos) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n') ? ' ' : c;
  }
  out += '"';
  return out;
}

}  // namespace baton

// Logging: spdlog, one key=value line per event on stderr.
//
// Every line starts with `ts=<RFC 3339 UTC> level=<level>` and then the
// message, which by convention is `event=<what happened> key=value ...` and
// ends with what baton does next where that is not obvious. Never log tokens.
//
//   spdlog::info("event=acquired holder={} token={}", id, token);
#ifndef BATON_SIDECAR_COMMON_LOG_H_
#define BATON_SIDECAR_COMMON_LOG_H_

#include <string>
#include <string_view>

#include "spdlog/spdlog.h"

namespace baton {

// Installs the stderr logger with baton's line format. Call once from main.
void InitLogging(spdlog::level::level_enum level = spdlog::level::info);

// Quotes a value for a key=value line when it is empty or has spaces, quotes,
// '=' or control characters, escaping quotes and backslashes with '\\' and
// control characters as \n, \r, \t or \xNN, so no value can end the line or
// rewrite it on a terminal; returns it unchanged otherwise.
std::string LogValue(std::string_view v);

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_LOG_H_

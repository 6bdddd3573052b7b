// Logging: spdlog, one line per event on stderr, as key=value pairs (logfmt)
// or as one JSON object.
//
// Every message is written as logfmt, by convention
// `event=<what happened> key=value ...`, ending with `next="..."` (what baton
// does next) where that is not obvious; values that need it go through
// LogValue. The logger prefixes `ts=<RFC 3339 UTC> level=<level>`, or, in
// JSON, turns the whole line into {"ts":...,"level":...,"event":...,...}
// with every value a string, keys in the order written. Never log
// credentials (ServiceAccount tokens, client keys).
//
//   spdlog::info("event=acquired holder={} token={}", LogValue(id), token);
#ifndef BATON_SIDECAR_COMMON_LOG_H_
#define BATON_SIDECAR_COMMON_LOG_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "spdlog/spdlog.h"

namespace baton {

enum class LogFormat { kLogfmt, kJson };

struct LogOptions {
  LogFormat format = LogFormat::kLogfmt;
  // Lines below this level are dropped.
  spdlog::level::level_enum level = spdlog::level::info;
};

// "logfmt" or "json". InvalidArgument naming --log-format otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(const std::string& name);

// "debug", "info", "warn" (or "warning") or "error". InvalidArgument naming
// --log-level otherwise.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(const std::string& name);

// Installs the stderr logger with baton's line format. Call once from main,
// before any thread logs.
void InitLogging(const LogOptions& options = {});

// The formatter InitLogging installs for `format`, for tests.
std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format);

// Quotes a value for a key=value line when it is empty or has spaces, quotes,
// '=' or control characters, escaping quotes and backslashes with '\\' and
// control characters as \n, \r, \t or \xNN, so no value can end the line or
// rewrite it on a terminal; returns it unchanged otherwise.
std::string LogValue(std::string_view v);

// One logfmt message (as LogValue quotes its values) as the JSON object of
// a line: `ts` and `level` first, then the message's keys in order, values
// unquoted and unescaped, as JSON strings. A message that is not logfmt
// becomes {"ts":...,"level":...,"msg":<the message>}.
std::string LogfmtToJson(std::string_view ts, std::string_view level, std::string_view message);

}  // namespace baton

#endif  // BATON_SIDECAR_COMMON_LOG_H_

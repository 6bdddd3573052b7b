#include "sidecar/common/log.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace baton {
namespace {

// RFC 3339 UTC with microseconds, as the logfmt prefix writes it.
constexpr char kLogfmtPattern[] = "ts=%Y-%m-%dT%H:%M:%S.%fZ level=%l %v";
constexpr char kTimeFormat[] = "%Y-%m-%dT%H:%M:%E6SZ";

bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// One value as LogValue wrote it, starting at `*at`: bare up to the next
// space, or quoted with its escapes undone. Advances `*at` past it; nullopt
// if the quoting is broken.
std::optional<std::string> ReadValue(std::string_view line, size_t* at) {
  size_t i = *at;
  if (i >= line.size() || line[i] != '"') {
    const size_t end = std::min(line.find(' ', i), line.size());
    *at = end;
    return std::string(line.substr(i, end - i));
  }
  std::string value;
  for (++i; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      *at = i + 1;
      return value;
    }
    if (c != '\\') {
      value += c;
      continue;
    }
    if (++i == line.size()) return std::nullopt;
    switch (line[i]) {
      case 'n':
        value += '\n';
        break;
      case 'r':
        value += '\r';
        break;
      case 't':
        value += '\t';
        break;
      case 'x': {
        int byte = 0;
        if (i + 2 >= line.size() ||
            !absl::SimpleHexAtoi(absl::string_view(line.data() + i + 1, 2), &byte)) {
          return std::nullopt;
        }
        value += static_cast<char>(byte);
        i += 2;
        break;
      }
      default:
        value += line[i];
    }
  }
  return std::nullopt;
}

// The key=value pairs of a logfmt line; nullopt if it is not one.
std::optional<std::vector<std::pair<std::string, std::string>>> ParseLogfmt(std::string_view line) {
  std::vector<std::pair<std::string, std::string>> fields;
  size_t at = 0;
  while (at < line.size()) {
    if (line[at] == ' ') {
      ++at;
      continue;
    }
    const size_t equals = line.find('=', at);
    const size_t space = line.find(' ', at);
    if (equals == std::string_view::npos || equals == at || space < equals) return std::nullopt;
    std::string key(line.substr(at, equals - at));
    at = equals + 1;
    std::optional<std::string> value = ReadValue(line, &at);
    if (!value.has_value() || (at < line.size() && line[at] != ' ')) return std::nullopt;
    fields.emplace_back(std::move(key), *std::move(value));
  }
  if (fields.empty()) return std::nullopt;
  return fields;
}

// Appends `s` in double quotes with `"`, `\` and control characters escaped:
// \n, \r and \t by name, any other control character as `control_prefix` and
// two hex digits (JSON's "\u00", logfmt's "\x").
void AppendQuoted(std::string& out, std::string_view s, std::string_view control_prefix) {
  out += '"';
  for (char c : s) {
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
        if (IsControl(c)) {
          out += control_prefix;
          absl::StrAppend(&out, absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void AppendJsonString(std::string& out, std::string_view s) { AppendQuoted(out, s, "\\u00"); }

void AppendJsonField(std::string& out, std::string_view key, std::string_view value) {
  if (out.size() > 1) out += ',';
  AppendJsonString(out, key);
  out += ':';
  AppendJsonString(out, value);
}

// Writes each line as LogfmtToJson's object.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string ts =
        absl::FormatTime(kTimeFormat, absl::FromChrono(msg.time), absl::UTCTimeZone());
    const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
    const std::string line = LogfmtToJson(ts, std::string_view(level.data(), level.size()),
                                          std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(const std::string& name) {
  if (name == "logfmt") return LogFormat::kLogfmt;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat("--log-format=", name, " is not logfmt or json"));
}

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(const std::string& name) {
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn" || name == "warning") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  return absl::InvalidArgumentError(
      absl::StrCat("--log-level=", name, " is not debug, info, warn or error"));
}

std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  return std::make_unique<spdlog::pattern_formatter>(kLogfmtPattern,
                                                     spdlog::pattern_time_type::utc);
}

void InitLogging(const LogOptions& options) {
  auto logger = spdlog::stderr_logger_mt("baton");
  logger->set_formatter(MakeLogFormatter(options.format));
  logger->set_level(options.level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

std::string LogfmtToJson(std::string_view ts, std::string_view level, std::string_view message) {
  std::string out = "{";
  AppendJsonField(out, "ts", ts);
  AppendJsonField(out, "level", level);
  if (std::optional<std::vector<std::pair<std::string, std::string>>> fields =
          ParseLogfmt(message)) {
    for (const auto& [key, value] : *fields) AppendJsonField(out, key, value);
  } else {
    AppendJsonField(out, "msg", message);
  }
  out += '}';
  return out;
}

std::string LogValue(std::string_view v) {
  auto plain = [](char c) { return c != ' ' && c != '"' && c != '=' && !IsControl(c); };
  if (!v.empty() && std::all_of(v.begin(), v.end(), plain)) return std::string(v);
  std::string out;
  AppendQuoted(out, v, "\\x");
  return out;
}

}  // namespace baton

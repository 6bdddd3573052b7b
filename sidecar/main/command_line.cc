#include "sidecar/main/command_line.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace baton {
namespace {

// Help text is wrapped to this width, indented by kHelpIndent.
constexpr size_t kHelpWidth = 80;
constexpr absl::string_view kHelpIndent = "      ";

std::string Normalised(absl::string_view name) { return absl::StrReplaceAll(name, {{"-", "_"}}); }

absl::CommandLineFlag* Find(const std::vector<absl::CommandLineFlag*>& flags,
                            absl::string_view name) {
  for (absl::CommandLineFlag* flag : flags) {
    if (flag->Name() == name) return flag;
  }
  return nullptr;
}

// What a valid value looks like, for the error message.
absl::string_view ValueHint(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return " (true or false)";
  if (flag.IsOfType<absl::Duration>()) return " (a duration such as 15s or 1500ms)";
  return "";
}

absl::Status Set(absl::CommandLineFlag& flag, absl::string_view value, absl::string_view source) {
  std::string error;
  if (flag.ParseFrom(value, &error)) return absl::OkStatus();
  // Abseil's message is "Illegal value '...' specified for flag '...'",
  // then "; " and the type's own reason, if it gave one.
  const size_t reason = error.find("; ");
  return absl::InvalidArgumentError(
      absl::StrCat(source, "=", value, " is not a valid value for ", DashedFlag(flag.Name()),
                   ValueHint(flag), reason == std::string::npos ? "" : ": ",
                   reason == std::string::npos ? "" : error.substr(reason + 2)));
}

bool IsHelp(absl::string_view word) {
  return word == "--help" || word == "-h" || word == "--helpfull" || word == "--helpshort" ||
         word == "-help";
}

// The placeholder after "=" in the help, by the flag's type.
absl::string_view TypeHint(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "[=true|false]";
  if (flag.IsOfType<absl::Duration>()) return "=DURATION";
  return "=STRING";
}

// `text` word-wrapped to kHelpWidth, every line indented by kHelpIndent.
std::string Wrapped(absl::string_view text) {
  std::string out;
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > kHelpWidth) {
      out += "\n";
      column = 0;
    }
    if (column == 0) {
      absl::StrAppend(&out, kHelpIndent, word);
      column = kHelpIndent.size() + word.size();
    } else {
      absl::StrAppend(&out, " ", word);
      column += 1 + word.size();
    }
  }
  out += "\n";
  return out;
}

// Whether `message` names `flag` ("--lease-name") as a whole word, so that
// "--lease-name" does not match inside "--lease-namespace".
bool Names(absl::string_view message, absl::string_view flag) {
  for (size_t at = message.find(flag); at != absl::string_view::npos;
       at = message.find(flag, at + 1)) {
    const size_t end = at + flag.size();
    if (end == message.size() || !(absl::ascii_isalnum(message[end]) || message[end] == '-')) {
      return true;
    }
  }
  return false;
}

}  // namespace

EnvironmentLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string DashedFlag(absl::string_view flag_name) {
  return absl::StrCat("--", absl::StrReplaceAll(flag_name, {{"_", "-"}}));
}

std::string EnvironmentVariable(absl::string_view flag_name) {
  return absl::StrCat("BATON_", absl::AsciiStrToUpper(Normalised(flag_name)));
}

absl::StatusOr<ParsedCommandLine> ParseCommandLine(const std::vector<absl::CommandLineFlag*>& flags,
                                                   const std::vector<std::string>& args,
                                                   const EnvironmentLookup& environment) {
  ParsedCommandLine parsed;
  for (absl::CommandLineFlag* flag : flags) {
    const std::string variable = EnvironmentVariable(flag->Name());
    const std::optional<std::string> value = environment(variable);
    if (!value.has_value() || value->empty()) continue;
    if (absl::Status s = Set(*flag, *value, variable); !s.ok()) return s;
    parsed.from_environment[DashedFlag(flag->Name())] = variable;
    parsed.given.insert(std::string(flag->Name()));
  }

  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (IsHelp(word)) {
      parsed.help = true;
      continue;
    }
    if (word == "--version") {
      parsed.version = true;
      continue;
    }
    if (word.size() < 2 || word[0] != '-') {
      parsed.positional.push_back(word);
      continue;
    }
    absl::string_view body = absl::StripPrefix(absl::StripPrefix(word, "-"), "-");
    const size_t equals = body.find('=');
    std::string name = Normalised(body.substr(0, equals));
    std::optional<std::string> value;
    if (equals != absl::string_view::npos) value = std::string(body.substr(equals + 1));

    absl::CommandLineFlag* flag = Find(flags, name);
    if (flag == nullptr && !value.has_value() && absl::StartsWith(name, "no")) {
      // --noflag: a bool set to false.
      absl::CommandLineFlag* negated = Find(flags, name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        flag = negated;
        value = "false";
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag ", DashedFlag(body.substr(0, equals)), " (baton --help lists them)"));
    }
    if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            DashedFlag(flag->Name()), " needs a value: ", DashedFlag(flag->Name()), "=VALUE"));
      }
    }
    if (absl::Status s = Set(*flag, *value, DashedFlag(flag->Name())); !s.ok()) return s;
    parsed.from_environment.erase(DashedFlag(flag->Name()));
    parsed.given.insert(std::string(flag->Name()));
  }
  parsed.after_double_dash = parsed.positional.size();
  parsed.positional.insert(parsed.positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i),
                           args.end());
  return parsed;
}

std::string NameEnvironmentSources(const std::string& message, const ParsedCommandLine& parsed,
                                   const EnvironmentLookup& environment) {
  std::vector<std::string> sources;
  for (const auto& [flag, variable] : parsed.from_environment) {
    if (!Names(message, flag)) continue;
    sources.push_back(
        absl::StrCat(flag, " is ", variable, "=", environment(variable).value_or("")));
  }
  if (sources.empty()) return message;
  std::sort(sources.begin(), sources.end());
  return absl::StrCat(message, " (", absl::StrJoin(sources, ", "), ")");
}

std::string FlagsHelp(const std::vector<absl::CommandLineFlag*>& flags) {
  std::vector<const absl::CommandLineFlag*> sorted(flags.begin(), flags.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string out;
  for (const absl::CommandLineFlag* flag : sorted) {
    const std::string default_value = flag->DefaultValue();
    absl::StrAppend(&out, "  ", DashedFlag(flag->Name()), TypeHint(*flag), "  (env ",
                    EnvironmentVariable(flag->Name()));
    if (!default_value.empty()) absl::StrAppend(&out, "; default ", default_value);
    absl::StrAppend(&out, ")\n", Wrapped(flag->Help()));
  }
  return out;
}

}  // namespace baton

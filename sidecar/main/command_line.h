// CommandLine: how baton's flags get their values, from the environment and
// then from argv, on top of Abseil's flag registry (the flags are ABSL_FLAGs;
// Abseil parses each value). baton walks argv itself so that every mistake
// is reported the same way (a message naming the flag or the environment
// variable, then exit 2), flags are spelled with dashes everywhere, and the
// help lists them that way.
//
// Rules:
//   * every flag --some-name may also be set as BATON_SOME_NAME; an empty
//     variable counts as unset, and a flag on the command line wins over the
//     variable. Other BATON_* variables are ignored (Kubernetes' service
//     links define BATON_SERVICE_HOST, BATON_PORT, ... for a Service named
//     baton);
//   * --name=value, or --name value for a flag that is not a bool; a bool is
//     --name, --name=true|false or --noname. Dashes and underscores in names
//     are the same (--lease-name, --lease_name);
//   * --help (-h, --helpfull, --helpshort) and --version are recognised
//     anywhere before "--";
//   * every other word is positional; after "--" every word is.
#ifndef BATON_SIDECAR_MAIN_COMMAND_LINE_H_
#define BATON_SIDECAR_MAIN_COMMAND_LINE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/flags/commandlineflag.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace baton {

// Looks an environment variable up; nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment, through getenv.
EnvironmentLookup ProcessEnvironment();

struct ParsedCommandLine {
  // Words that are not flags, in order, "--" excluded.
  std::vector<std::string> positional;
  // Index in `positional` of the first word after "--"; positional.size()
  // when there was no "--".
  size_t after_double_dash = 0;
  bool help = false;
  bool version = false;
  // Flags whose value came from the environment and not the command line:
  // "--lease-duration" → "BATON_LEASE_DURATION".
  absl::flat_hash_map<std::string, std::string> from_environment;
  // Every flag given a value, on the command line or in the environment, by
  // name ("lease_duration"), whatever the value: a flag set to its default
  // was still given.
  absl::flat_hash_set<std::string> given;
};

// "lease_name" → "--lease-name".
std::string DashedFlag(absl::string_view flag_name);

// "lease_name" → "BATON_LEASE_NAME".
std::string EnvironmentVariable(absl::string_view flag_name);

// Sets `flags` from the environment, then from `args` (argv without the
// program name and subcommand). InvalidArgument naming the flag or variable
// for an unknown flag, a missing or unparsable value. The flags must outlive
// the call; values already set stay set on error.
absl::StatusOr<ParsedCommandLine> ParseCommandLine(const std::vector<absl::CommandLineFlag*>& flags,
                                                   const std::vector<std::string>& args,
                                                   const EnvironmentLookup& environment);

// `message` (an error about flags, naming them as --flag-name), followed by
// the environment variables that set the flags it names, so an operator
// knows where to look: "... (--api-timeout is BATON_API_TIMEOUT=3s)".
std::string NameEnvironmentSources(const std::string& message, const ParsedCommandLine& parsed,
                                   const EnvironmentLookup& environment);

// The flags for --help, sorted by name: each as --dashed-name[=TYPE], its
// environment variable and default, then its help text wrapped at 80
// columns.
std::string FlagsHelp(const std::vector<absl::CommandLineFlag*>& flags);

}  // namespace baton

#endif  // BATON_SIDECAR_MAIN_COMMAND_LINE_H_

#include "sidecar/run/run_policy.h"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sidecar/election/elector.h"

namespace baton::run {
namespace {

struct NamedSignal {
  const char* name;
  int number;
};
constexpr NamedSignal kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"WINCH", SIGWINCH},
};

}  // namespace

std::string SignalName(int sig) {
  for (const NamedSignal& s : kSignals) {
    if (s.number == sig) return absl::StrCat("SIG", s.name);
  }
  return absl::StrCat(sig);
}

absl::StatusOr<RestartPolicy> ParseRestartPolicy(absl::string_view value) {
  if (value == "always") return RestartPolicy::kAlways;
  if (value == "on-failure") return RestartPolicy::kOnFailure;
  if (value == "never") return RestartPolicy::kNever;
  return absl::InvalidArgumentError(
      absl::StrCat("--restart=", value, " must be always, on-failure or never"));
}

absl::StatusOr<int> ParseStopSignal(absl::string_view value) {
  int number = 0;
  if (absl::SimpleAtoi(value, &number)) {
    if (number >= 1 && number <= 64) return number;
  } else {
    std::string name = absl::AsciiStrToUpper(value);
    absl::string_view bare = absl::StripPrefix(name, "SIG");
    for (const NamedSignal& s : kSignals) {
      if (bare == s.name) return s.number;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--stop-signal=", value,
      " is not a signal: give a name (SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, "
      "SIGWINCH, SIGKILL) or a number"));
}

ExitStatus ExitStatus::Exited(int code) {
  ExitStatus s;
  s.code = code;
  return s;
}

ExitStatus ExitStatus::Killed(int signal) {
  ExitStatus s;
  s.signaled = true;
  s.signal = signal;
  return s;
}

ExitStatus ExitStatus::FromWaitStatus(int status) {
  return WIFSIGNALED(status) ? Killed(WTERMSIG(status)) : Exited(WEXITSTATUS(status));
}

std::string ExitStatus::ToString() const {
  return signaled ? absl::StrCat("signal=", SignalName(signal)) : absl::StrCat("exit_code=", code);
}

int ExitCodeFor(const ExitStatus& status) {
  return status.signaled ? 128 + status.signal : status.code;
}

bool ShouldRestart(RestartPolicy policy, const ExitStatus& status) {
  switch (policy) {
    case RestartPolicy::kAlways:
      return true;
    case RestartPolicy::kOnFailure:
      return !status.Success();
    case RestartPolicy::kNever:
      return false;
  }
  return false;
}

MonoTime StopSignalAt(MonoTime valid_until, absl::Duration stop_grace) {
  return valid_until + -(stop_grace + kKillMargin);
}

MonoTime KillAt(MonoTime signaled_at, MonoTime valid_until, absl::Duration stop_grace) {
  return std::min(signaled_at + stop_grace, valid_until + -kKillMargin);
}

MonoTime WatchdogKillAt(MonoTime valid_until) { return valid_until + -kWatchdogMargin; }

absl::Status ValidateStopGrace(absl::Duration stop_grace, absl::Duration renew_deadline,
                               absl::Duration retry_period) {
  if (stop_grace <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--stop-grace=", absl::FormatDuration(stop_grace), " must be positive"));
  }
  const absl::Duration lowest_validity = renew_deadline - retry_period * (1 + Elector::kMaxJitter);
  if (stop_grace + kKillMargin >= lowest_validity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--stop-grace=", absl::FormatDuration(stop_grace), " plus ",
        absl::FormatDuration(kKillMargin),
        " must be shorter than --renew-deadline − 1.2 × "
        "--retry-period = ",
        absl::FormatDuration(lowest_validity),
        " (--renew-deadline=", absl::FormatDuration(renew_deadline),
        " --retry-period=", absl::FormatDuration(retry_period),
        "): a healthy leader's validity falls that low just before each renew, and the child "
        "must be stopped only when renews fail"));
  }
  return absl::OkStatus();
}

}  // namespace baton::run

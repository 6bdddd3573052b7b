#include "sidecar/run/runner.h"

#include <csignal>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sidecar/common/log.h"

namespace baton::run {
namespace {

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

}  // namespace

MonoTime MonoInfiniteFuture() { return MonoTime::FromSinceOrigin(absl::InfiniteDuration()); }

Runner::Runner(Options options, Clock* clock, LeadershipPublisher* publisher,
               Supervisor* supervisor)
    : options_(std::move(options)), clock_(clock), publisher_(publisher), supervisor_(supervisor) {}

void Runner::GiveBack(int64_t token, MonoTime valid_until) {
  options_.acknowledge(Acknowledgement{options_.client_id, token, valid_until});
}

void Runner::Shutdown() { shutting_down_ = true; }

MonoTime Runner::Poll() {
  const MonoTime now = clock_->Monotonic();
  return child_.has_value() ? PollChild(now) : PollIdle(now);
}

bool Runner::CanStart(const Leadership& l, MonoTime now) const {
  return l.IsLeader(now) && l.ValidFor(now) > options_.stop_grace + kKillMargin;
}

MonoTime Runner::PollIdle(MonoTime now) {
  if (exit_code_.has_value()) return MonoInfiniteFuture();
  if (shutting_down_) {
    exit_code_ = 0;
    return MonoInfiniteFuture();
  }
  if (restart_at_.has_value() && now < *restart_at_) return *restart_at_;
  // Read first, so that a follower records no promise.
  if (!CanStart(publisher_->Current().leadership, now)) return MonoInfiniteFuture();
  const Leadership answer = publisher_->Promise(options_.client_id, now).leadership();
  if (!CanStart(answer, now)) {
    // The term ended between the two reads: give back what Answer recorded.
    GiveBack(answer.fencing_token, answer.leader_until);
    return MonoInfiniteFuture();
  }
  restart_at_.reset();
  if (!StartChild(answer, now)) return MonoInfiniteFuture();
  return PollChild(now);
}

bool Runner::StartChild(const Leadership& answer, MonoTime now) {
  const absl::Time valid_until_wall = clock_->Wall() + (answer.leader_until - now);
  ChildSpec spec;
  spec.argv = options_.argv;
  spec.extra_env = {
      absl::StrCat("BATON_FENCING_TOKEN=", answer.fencing_token),
      absl::StrCat("BATON_FENCING_REVISION=",
                   answer.fencing_revision ? answer.fencing_revision->digits() : "0"),
      absl::StrCat("BATON_LEASE=", answer.lease_namespace, "/", answer.lease_name),
      absl::StrCat("BATON_IDENTITY=", answer.identity),
      absl::StrCat("BATON_VALID_UNTIL=", Rfc3339(valid_until_wall)),
  };
  spec.kill_by = WatchdogKillAt(answer.leader_until);
  const absl::StatusOr<pid_t> pid = supervisor_->Start(spec);
  if (!pid.ok()) {
    spdlog::error("event=child_start_failed token={} error={} next=\"handle as exit code 127\"",
                  answer.fencing_token, LogValue(pid.status().ToString()));
    GiveBack(answer.fencing_token, answer.leader_until);
    Ended(ExitStatus::Exited(127), now);
    return false;
  }
  child_ = Child();
  child_->token = answer.fencing_token;
  child_->valid_until = answer.leader_until;
  spdlog::info("event=child_started pid={} token={} valid_for={} command={}", *pid,
               answer.fencing_token,
               absl::FormatDuration(absl::Trunc(answer.leader_until - now, absl::Milliseconds(1))),
               LogValue(absl::StrJoin(options_.argv, " ")));
  return true;
}

MonoTime Runner::PollChild(MonoTime now) {
  Child& c = *child_;
  if (!c.signaled_at.has_value()) {
    if (shutting_down_) {
      BeginStop(now, "shutdown");
    } else {
      const Leadership l = publisher_->Promise(options_.client_id, now).leadership();
      if (!l.IsLeader(now) || l.fencing_token != c.token) {
        BeginStop(now, l.stepping_down ? "stepping_down" : "not_leader");
      } else {
        if (l.leader_until != c.valid_until) {
          c.valid_until = l.leader_until;
          supervisor_->ExtendDeadline(WatchdogKillAt(c.valid_until));
        }
        const MonoTime stop_at = StopSignalAt(c.valid_until, options_.stop_grace);
        if (now < stop_at) return stop_at;
        BeginStop(now, "validity_ending");
      }
    }
  }
  if (c.killed) return MonoInfiniteFuture();
  const MonoTime kill_at = KillAt(*c.signaled_at, c.valid_until, options_.stop_grace);
  if (now < kill_at) return kill_at;
  supervisor_->Signal(SIGKILL);
  c.killed = true;
  spdlog::warn("event=child_killed token={} next=\"reap it, then acknowledge the step-down\"",
               c.token);
  return MonoInfiniteFuture();
}

void Runner::BeginStop(MonoTime now, const char* reason) {
  Child& c = *child_;
  c.signaled_at = now;
  supervisor_->Signal(options_.stop_signal);
  spdlog::info(
      "event=child_stopping reason={} token={} signal={} valid_for={} next=\"SIGKILL of its "
      "process group in {} unless it exits\"",
      reason, c.token, SignalName(options_.stop_signal),
      absl::FormatDuration(absl::Trunc(c.valid_until - now, absl::Milliseconds(1))),
      absl::FormatDuration(absl::Trunc(KillAt(now, c.valid_until, options_.stop_grace) - now,
                                       absl::Milliseconds(1))));
}

void Runner::OnChildExit(const ExitStatus& status) {
  if (!child_.has_value()) return;
  const MonoTime now = clock_->Monotonic();
  const Child c = *child_;
  child_.reset();
  // The child is gone: its promises are given back, so a step-down waiting
  // for them can release at once.
  GiveBack(c.token, c.valid_until);
  if (shutting_down_ || c.signaled_at.has_value()) {
    spdlog::info("event=child_exited token={} {} stopped_by=baton next=\"{}\"", c.token,
                 status.ToString(),
                 shutting_down_ ? "release and exit" : "campaign; run it again once leading");
    if (shutting_down_) exit_code_ = 0;
    return;
  }
  Ended(status, now);
}

void Runner::Ended(const ExitStatus& status, MonoTime now) {
  if (ShouldRestart(options_.restart, status)) {
    restart_at_ = now + options_.restart_delay;
    spdlog::info("event=child_exited {} next=\"run it again in {} while leading\"",
                 status.ToString(), absl::FormatDuration(options_.restart_delay));
    return;
  }
  exit_code_ = ExitCodeFor(status);
  spdlog::info("event=child_exited {} restart=no next=\"release the Lease and exit {}\"",
               status.ToString(), *exit_code_);
}

}  // namespace baton::run

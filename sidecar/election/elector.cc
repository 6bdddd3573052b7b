#include "sidecar/election/elector.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "sidecar/common/log.h"

namespace baton {
namespace {

std::function<double()> DefaultJitter() {
  // std::function must be copyable; the generator is shared by the copies.
  auto gen = std::make_shared<absl::BitGen>();
  return [gen] { return absl::Uniform(absl::IntervalClosedClosed, *gen, 0.0, 1.0); };
}

std::string Fmt(absl::Duration d) { return absl::FormatDuration(d); }

// The API server answered, even if the answer was "no": it is reachable, and
// the answer tells the elector something about the Lease.
bool Answered(const absl::Status& status) {
  return status.ok() || absl::IsNotFound(status) || absl::IsAlreadyExists(status) ||
         absl::IsAborted(status);
}

}  // namespace

Elector::Elector(Options options, Clock* clock, LeaseStore* store)
    : options_(std::move(options)),
      clock_(clock),
      store_(store),
      jitter_(options_.jitter ? options_.jitter : DefaultJitter()),
      lease_ref_(absl::StrCat(options_.lease_namespace, "/", options_.lease_name)) {}

MonoTime Elector::Step() {
  MonoTime now = clock_->Monotonic();

  // 0. Leadership ended at leader_until_ whether or not anyone noticed
  //    (Snapshot().IsLeader already says so); make it official before any I/O.
  if (holding_ && now >= leader_until_) StopHolding("lost", "renew_deadline_passed");
  if (holding_) AnnounceIfLeading(now);

  // 1. Leader fast path: renew the cached record. Only a conflict (the Lease
  //    changed: another writer, or our own earlier write that landed although
  //    it reported failure) or its deletion calls for the read below; other
  //    errors leave the leader leading until leader_until_, and it retries.
  if (holding_) {
    LeaseRecord next = *record_;
    next.lease_duration_seconds = WrittenDurationSeconds();
    const absl::Status renewed = WriteAsHolder(Write::kRenew, next);
    if (!absl::IsAborted(renewed) && !absl::IsNotFound(renewed)) {
      return Schedule(clock_->Monotonic(), renewed.ok());
    }
    if (options_.listener) options_.listener->OnSlowPath();
  }

  // 2. Read the Lease; create it if it does not exist.
  const absl::StatusOr<LeaseRecord> read = store_->Get();
  now = clock_->Monotonic();
  NoteApiResult(read.status(), "get", now);
  if (!read.ok() && !absl::IsNotFound(read.status())) return Schedule(now, false);
  Note(read.ok() ? std::optional<LeaseRecord>(*read) : std::nullopt, now);
  if (!record_) {
    // A vanished holder's term, no history yet, or resigned: not yet.
    if (ActAt(now) > now) return Schedule(now, true);
    const std::optional<int32_t> token = NextToken();
    if (!token) return Schedule(now, true);
    LeaseRecord fresh;
    fresh.holder_identity = options_.identity;
    fresh.lease_duration_seconds = WrittenDurationSeconds();
    fresh.lease_transitions = *token;
    if (highest_transitions_) {
      spdlog::info(
          "event=recreating_lease lease={} token={} highest_seen={} next=\"create it with a "
          "token above every one seen, so fencing tokens keep increasing\"",
          lease_ref_, fresh.lease_transitions, *highest_transitions_);
    }
    absl::Status created = WriteAsHolder(Write::kCreate, fresh);
    if (absl::IsAlreadyExists(created)) created = ReadAfterConflict();
    return Schedule(clock_->Monotonic(), created.ok());
  }

  // 3. Someone else holds it and, as this candidate has observed it, it has
  //    not expired (or we resigned it and are letting others have it): follow.
  if (ActAt(now) > now) return Schedule(now, true);

  // 4. Take it. Our own term (still holding, or resuming one that a failed
  //    renew left in place) is renewed as it is; a free or expired Lease is
  //    taken over with the next token. Conflict: someone else won; re-read.
  LeaseRecord next = *record_;
  Write kind = Write::kRenew;
  next.lease_duration_seconds = WrittenDurationSeconds();
  if (!IsOurs(next)) {
    // highest_transitions_ includes this record's; it is higher only if the
    // Lease was recreated with a lower count since we last saw it.
    const std::optional<int32_t> token = NextToken();
    if (!token) return Schedule(now, true);
    kind = Write::kTakeOver;
    next.holder_identity = options_.identity;
    next.lease_transitions = *token;
  }
  absl::Status written = WriteAsHolder(kind, next);
  if (absl::IsAborted(written) || absl::IsNotFound(written)) written = ReadAfterConflict();
  return Schedule(clock_->Monotonic(), written.ok());
}

MonoTime Elector::Observe(const LeaseEvent& event) {
  const MonoTime now = clock_->Monotonic();
  last_api_contact_ = now;
  watch_heard_at_ = now;
  watch_quiet_logged_ = false;
  const std::optional<ResourceVersion> revision = ResourceVersion::Parse(event.resource_version);
  // An absence we cannot order (a GET that found nothing), or an event older
  // than what this elector already knows (e.g. of the version its own last
  // write replaced): it tells this elector nothing it does not know.
  if (!event.record && !revision) return next_step_;
  if (revision && known_revision_ && *revision <= *known_revision_) return next_step_;
  if (revision) known_revision_ = revision;
  if (holding_) {
    // Our term, edited by someone else (annotations, or a cut
    // leaseDurationSeconds, which the next renew puts back at once).
    if (event.record && IsOurs(*event.record)) {
      Note(event.record, now);
      if (event.record->lease_duration_seconds != WrittenDurationSeconds()) next_step_ = now;
      return next_step_;
    }
    // Someone else's term or a deletion, as far as this event says. It may
    // be stale, so it cannot end ours; the step it brings forward decides
    // from its own write and read.
    next_step_ = now;
    return next_step_;
  }
  Note(event.record, now);
  next_step_ = watch_available_ ? FollowWithWatch(now) : std::min(next_step_, ActAt(now));
  return next_step_;
}

MonoTime Elector::SetWatchAvailable(bool available) {
  const MonoTime now = clock_->Monotonic();
  if (available != watch_available_) {
    spdlog::info("event={} lease={} next=\"{}\"", available ? "watch_started" : "watch_unavailable",
                 lease_ref_,
                 available ? "follow the watch; act at the observed expiry"
                           : absl::StrCat("poll every ~", Fmt(options_.retry_period)));
  }
  if (available && !watch_available_) {
    watch_heard_at_ = now;
    watch_quiet_logged_ = false;
  }
  watch_available_ = available;
  if (!holding_ && observed_) {
    next_step_ =
        available ? FollowWithWatch(now) : std::min(next_step_, now + JitteredRetryPeriod());
  }
  return next_step_;
}

void Elector::Release() {
  if (holding_) StopHolding("stepped_down", "shutdown", "release and exit");
  if (!options_.release_on_shutdown) {
    if (term_) {
      spdlog::info(
          "event=release_skipped lease={} reason=release_on_shutdown_disabled next=\"exit; others "
          "take the Lease over when it expires\"",
          lease_ref_);
    }
    return;
  }
  // Even when not holding: a renew that failed may have left our term in
  // place, and handing it over now beats letting it expire. The fresh read in
  // ReleaseIfOurs keeps this from touching anyone else's Lease.
  if (term_) ReleaseIfOurs("shutdown");
}

MonoTime Elector::Resign() {
  if (!holding_) {
    spdlog::info("event=resign_ignored lease={} reason=not_holding next=\"{}\"", lease_ref_,
                 NextAction(clock_->Monotonic()));
    return next_step_;
  }
  const int32_t resigned_transitions = term_->lease_transitions;
  StopHolding("stepped_down", "resign", "release, then campaign again");
  ReleaseIfOurs("resign");
  const MonoTime now = clock_->Monotonic();
  // Without this, the next Step would find the Lease free and take it straight
  // back, so resigning would hand over nothing.
  resign_hold_off_ = ResignHoldOff{now + options_.lease_duration, resigned_transitions};
  const MonoTime next = Schedule(now, true);
  spdlog::info(
      "event=resigned lease={} next=\"campaign again once another holder has acquired the "
      "Lease or after {}\"",
      lease_ref_, Fmt(options_.lease_duration));
  return next;
}

Leadership Elector::Snapshot() const {
  Leadership l;
  l.identity = options_.identity;
  l.lease_name = options_.lease_name;
  l.lease_namespace = options_.lease_namespace;
  l.observed = observed_;
  // A term acquired over a possibly hidden one is published as held only
  // once it leads; the loop runs a step at leading_from_ to publish it.
  l.holding = holding_ && clock_->Monotonic() >= leading_from_;
  if (l.holding) {
    l.leader_until = leader_until_;
    l.fencing_token = term_->lease_transitions;
    l.fencing_revision = term_->revision;
  }
  if (record_) {
    l.lease_uid = record_->uid;
    l.holder_identity = record_->holder_identity;
    if (!l.holding) {
      l.fencing_token = record_->lease_transitions;
      l.fencing_revision = ResourceVersion::Parse(record_->resource_version);
    }
    l.acquire_time = record_->acquire_time;
    l.renew_time = record_->renew_time;
    l.lease_duration_seconds = record_->lease_duration_seconds;
  }
  return l;
}

ElectionHealth Elector::Health() const { return {last_api_contact_, next_step_}; }

MonoTime Elector::Schedule(MonoTime now, bool api_answered) {
  const absl::Duration period = JitteredRetryPeriod();
  if (holding_) {
    // Never later than leader_until_: a leader whose renews keep failing must
    // run at that instant to step down and publish it.
    next_step_ = std::min(now + period, leader_until_);
    if (now < leading_from_) next_step_ = std::min(next_step_, leading_from_);
  } else if (!api_answered) {
    next_step_ = now + period;
  } else {
    const MonoTime act =
        watch_available_ ? FollowWithWatch(now) : std::min(ActAt(now), now + period);
    // If this step left the Lease open to us (e.g. it lost a race for a free
    // one), wait a period rather than spin on it.
    next_step_ = act > now ? act : now + period;
  }
  return next_step_;
}

MonoTime Elector::ActAt(MonoTime now) const {
  // A Lease without a holder that may hide a term is taken at once (nobody
  // can renew in it): the claims decide when the new term leads instead.
  const bool take_now = may_hide_term_ && record_ && record_->holder_identity.empty();
  if (claimed_until_ && !take_now) return *claimed_until_;
  return resign_hold_off_ ? std::max(now, resign_hold_off_->until) : now;
}

MonoTime Elector::FollowWithWatch(MonoTime now) {
  const MonoTime act = ActAt(now);
  const bool renewed_by_another = record_ && !record_->holder_identity.empty() && !IsOurs(*record_);
  if (!renewed_by_another) return act;
  const MonoTime quiet_from = watch_heard_at_ + kQuietWatchPeriods * options_.retry_period;
  if (now < quiet_from) return std::min(act, quiet_from);
  if (!watch_quiet_logged_) {
    watch_quiet_logged_ = true;
    spdlog::info(
        "event=watch_quiet lease={} holder={} quiet_for={} next=\"read the Lease every ~{} "
        "until the watch delivers or the term expires\"",
        lease_ref_, LogValue(record_->holder_identity), Fmt(now - watch_heard_at_),
        Fmt(options_.retry_period));
  }
  return std::min(act, now + JitteredRetryPeriod());
}

std::optional<int32_t> Elector::NextToken() const {
  if (!highest_transitions_) return 0;
  if (*highest_transitions_ < std::numeric_limits<int32_t>::max()) return *highest_transitions_ + 1;
  spdlog::error(
      "event=token_exhausted lease={} highest_seen={} next=\"never acquire this Lease again: "
      "leaseTransitions cannot grow past int32, so a new term could not get a higher fencing "
      "token\"",
      lease_ref_, *highest_transitions_);
  return std::nullopt;
}

void Elector::UpdateClaim(const std::optional<LeaseRecord>* previous,
                          const std::optional<LeaseRecord>& record, MonoTime now) {
  auto claim_until = [&](MonoTime until) {
    claimed_until_ = std::max(claimed_until_.value_or(until), until);
  };
  auto free = [&] {
    claimed_until_.reset();
    may_hide_term_ = false;
  };
  const LeaseRecord* last = previous != nullptr && previous->has_value() ? &**previous : nullptr;

  if (record && IsOurs(*record)) return free();
  if (record && !record->holder_identity.empty()) {
    may_hide_term_ = false;
    return claim_until(
        now + std::max(absl::Seconds(record->lease_duration_seconds), options_.lease_duration));
  }
  if (record) {
    const bool same_object = last != nullptr && last->uid == record->uid &&
                             last->lease_transitions == record->lease_transitions;
    if (same_object && !last->holder_identity.empty() && record->lease_duration_seconds == 1) {
      return free();  // the release of the term we saw (baton's or client-go's)
    }
    if (same_object && last->holder_identity.empty()) return;  // nothing new
    may_hide_term_ = true;
    spdlog::info(
        "event=unseen_term_possible lease={} why={} next=\"a term acquired over it leads only {} "
        "after its write\"",
        lease_ref_,
        previous == nullptr               ? "first_seen_without_holder"
        : last == nullptr || !same_object ? "recreated_without_holder"
                                          : "holder_cleared_without_release",
        Fmt(UnseenPromiseBound(options_.renew_deadline)));
    return;
  }
  // No Lease: even if it was ours, someone may have re-applied it, held it
  // and seen it deleted meanwhile. Whoever held it cannot renew any more, so
  // its claim ends: the Lease is recreated at once, and the new term leads
  // only once every promise the vanished term can have made has lapsed
  // (may_hide_term_).
  claimed_until_.reset();
  may_hide_term_ = true;
  if (previous == nullptr) {
    // A first read: a member that saw it vanish recreates it at once, on
    // the watch event or within one jittered retry period of polling, with
    // a token above the vanished term's. Let it go first.
    claim_until(now + kNoHistoryCreateDelay * options_.retry_period);
    spdlog::info(
        "event=no_lease lease={} next=\"create it in {} unless it appears: a candidate that saw "
        "it vanish recreates it first\"",
        lease_ref_, Fmt(*claimed_until_ - now));
  }
}

absl::Duration Elector::JitteredRetryPeriod() {
  return options_.retry_period * (1 + kMaxJitter * std::clamp(jitter_(), 0.0, 1.0));
}

void Elector::Note(const std::optional<LeaseRecord>& record, MonoTime now) {
  const bool first = !observed_;
  observed_ = true;
  if (record) {
    highest_transitions_ = std::max(highest_transitions_.value_or(record->lease_transitions),
                                    record->lease_transitions);
    if (std::optional<ResourceVersion> rv = ResourceVersion::Parse(record->resource_version)) {
      if (!known_revision_ || *known_revision_ < *rv) known_revision_ = std::move(rv);
    }
  }
  if (!first && record == record_) return;
  UpdateClaim(first ? nullptr : &record_, record, now);

  const std::string previous_holder = record_ ? record_->holder_identity : "";
  if (record_ && !record) {
    spdlog::info("event=lease_deleted lease={} last_holder={} last_transitions={}", lease_ref_,
                 LogValue(previous_holder), record_->lease_transitions);
  } else if (record_ && record && record_->uid != record->uid) {
    spdlog::info("event=lease_recreated lease={} holder={} transitions={} highest_seen={}",
                 lease_ref_, LogValue(record->holder_identity), record->lease_transitions,
                 *highest_transitions_);
  }
  record_ = record;

  const bool ours = record && IsOurs(*record);
  if (ours && !term_->revision) term_->revision = ResourceVersion::Parse(record->resource_version);
  if (record && resign_hold_off_ &&
      ((!record->holder_identity.empty() && !ours) ||
       record->lease_transitions > resign_hold_off_->resigned_transitions)) {
    resign_hold_off_.reset();
  }
  if (holding_ && !ours) StopHolding("lost", record ? "lease_changed_hands" : "lease_deleted");

  const std::string holder = record ? record->holder_identity : "";
  if (holder == previous_holder) return;
  if (options_.listener) options_.listener->OnObservedHolder(holder);
  // Our own acquisition is logged as event=acquired.
  if (ours) return;
  spdlog::info(
      "event=observed_holder lease={} holder={} previous={} transitions={} "
      "lease_duration_seconds={}{} next=\"{}\"",
      lease_ref_, LogValue(holder), LogValue(previous_holder),
      record ? record->lease_transitions : 0, record ? record->lease_duration_seconds : 0,
      holder == options_.identity ? " own_identity_earlier_process=true" : "", NextAction(now));
}

bool Elector::IsOurs(const LeaseRecord& record) const {
  return term_ && record.holder_identity == options_.identity &&
         record.acquire_time == term_->acquire_time &&
         record.lease_transitions == term_->lease_transitions;
}

absl::Status Elector::WriteAsHolder(Write kind, LeaseRecord next) {
  // The send time first, then the renewTime stamp. Followers time this
  // holder from the renewTime they see, at one-second resolution
  // (timing.h); the leadership granted below counts from `sent`, so `sent`
  // must not be later than the stamp, however long this thread is held up
  // between the two readings (a loaded node).
  const MonoTime sent = clock_->Monotonic();
  next.renew_time = WallNow();
  if (kind != Write::kRenew) next.acquire_time = next.renew_time;
  // Remember the acquisition before sending it: if it lands but the answer is
  // lost, the next read recognises it as ours.
  if (kind != Write::kRenew) {
    term_ = Term{*next.acquire_time, next.lease_transitions, std::nullopt, may_hide_term_,
                 claimed_until_.value_or(MonoTime())};
  }
  const char* verb = kind == Write::kCreate     ? "create"
                     : kind == Write::kTakeOver ? "take_over"
                                                : "renew";
  const absl::StatusOr<LeaseRecord> result =
      kind == Write::kCreate ? store_->Create(next) : store_->Update(next);
  const MonoTime now = clock_->Monotonic();
  if (kind == Write::kRenew && options_.listener) {
    options_.listener->OnRenew(now - sent, result.ok());
  }
  NoteApiResult(result.status(), verb, now);
  if (!result.ok()) {
    if (Answered(result.status())) {
      spdlog::info("event=write_conflict lease={} write={} error={} next=\"re-read the Lease\"",
                   lease_ref_, verb, LogValue(result.status().ToString()));
    }
    return result.status();
  }

  Note(*result, now);
  // The send time, not the answer's: the server may have applied the write
  // (and followers started timing it) at any moment after we sent it. And no
  // longer than what the duration written grants against followers (P6).
  leader_until_ = sent + std::min(options_.renew_deadline,
                                  SafeLeadershipFor(absl::Seconds(next.lease_duration_seconds)));
  if (!holding_) {
    holding_ = true;
    leading_from_ =
        term_->over_unseen && !term_->led
            ? std::max(now + UnseenPromiseBound(options_.renew_deadline), term_->claimed_until)
            : now;
    const char* how = kind == Write::kCreate     ? "created"
                      : kind == Write::kTakeOver ? "took_over"
                                                 : "resumed";
    spdlog::info(
        "event=acquired lease={} holder={} token={} how={} write_latency={} leader_for={} "
        "leads_in={} next=\"renew every ~{}; lead until a renew has not succeeded for {}\"",
        lease_ref_, LogValue(options_.identity), term_->lease_transitions, how, Fmt(now - sent),
        Fmt(leader_until_ - now), Fmt(leading_from_ - now), Fmt(options_.retry_period),
        Fmt(options_.renew_deadline));
    announced_ = false;
    AnnounceIfLeading(now);
  }
  return absl::OkStatus();
}

absl::Status Elector::ReadAfterConflict() {
  const absl::StatusOr<LeaseRecord> read = store_->Get();
  const MonoTime now = clock_->Monotonic();
  NoteApiResult(read.status(), "get", now);
  if (!read.ok() && !absl::IsNotFound(read.status())) return read.status();
  Note(read.ok() ? std::optional<LeaseRecord>(*read) : std::nullopt, now);
  return absl::OkStatus();
}

void Elector::ReleaseIfOurs(const char* why) {
  const absl::StatusOr<LeaseRecord> read = store_->Get();
  MonoTime now = clock_->Monotonic();
  NoteApiResult(read.status(), "get", now);
  if (!read.ok()) {
    spdlog::warn(
        "event=release_skipped lease={} why={} reason=read_failed error={} next=\"others take "
        "the Lease over when it expires\"",
        lease_ref_, why, LogValue(read.status().ToString()));
    return;
  }
  Note(*read, now);
  if (!IsOurs(*read)) {
    spdlog::info(
        "event=release_skipped lease={} why={} reason=not_ours holder={} next=\"leave it "
        "alone\"",
        lease_ref_, why, LogValue(read->holder_identity));
    return;
  }
  LeaseRecord released = *read;
  released.holder_identity.clear();
  released.lease_duration_seconds = 1;
  released.acquire_time = released.renew_time = WallNow();
  const absl::StatusOr<LeaseRecord> result = store_->Update(released);
  now = clock_->Monotonic();
  NoteApiResult(result.status(), "release", now);
  if (!result.ok()) {
    spdlog::warn(
        "event=release_failed lease={} why={} error={} next=\"others take the Lease over when it "
        "expires\"",
        lease_ref_, why, LogValue(result.status().ToString()));
    return;
  }
  Note(*result, now);
  spdlog::info("event=released lease={} why={} token={} next=\"followers may take it at once\"",
               lease_ref_, why, result->lease_transitions);
  if (options_.listener) options_.listener->OnReleased();
}

void Elector::AnnounceIfLeading(MonoTime now) {
  if (announced_ || now < leading_from_) return;
  announced_ = true;
  if (term_->over_unseen && !term_->led) {
    spdlog::info("event=leading lease={} token={} next=\"renew every ~{}\"", lease_ref_,
                 term_->lease_transitions, Fmt(options_.retry_period));
  }
  term_->led = true;
  if (options_.listener) options_.listener->OnAcquired(term_->lease_transitions);
}

void Elector::StopHolding(const char* event, const char* reason, const char* next) {
  holding_ = false;
  const MonoTime now = clock_->Monotonic();
  spdlog::info("event={} lease={} reason={} token={} holder={} overdue_by={} next=\"{}\"", event,
               lease_ref_, reason, term_->lease_transitions,
               LogValue(record_ ? record_->holder_identity : ""),
               Fmt(std::max(absl::ZeroDuration(), now - leader_until_)), next);
  if (options_.listener && announced_) options_.listener->OnLost(reason);
  announced_ = false;
}

void Elector::NoteApiResult(const absl::Status& status, const char* verb, MonoTime now) {
  if (Answered(status)) {
    last_api_contact_ = now;
    if (failures_ > 0) {
      spdlog::info("event={} lease={} verb={} failed_calls={} trouble_for={}",
                   holding_ && status.ok() && std::string_view(verb) == "renew"
                       ? "renewed_after_trouble"
                       : "api_recovered",
                   lease_ref_, verb, failures_, Fmt(now - failing_since_));
      failures_ = 0;
    }
    return;
  }
  if (failures_++ > 0) {
    spdlog::debug("event=api_error lease={} verb={} error={} failed_calls={}", lease_ref_, verb,
                  LogValue(status.ToString()), failures_);
    return;
  }
  failing_since_ = now;
  if (holding_) {
    spdlog::warn(
        "event=renew_failed lease={} verb={} error={} next=\"retry every ~{}; stop leading in "
        "{} unless a renew succeeds\"",
        lease_ref_, verb, LogValue(status.ToString()), Fmt(options_.retry_period),
        Fmt(leader_until_ - now));
  } else {
    spdlog::warn("event=api_error lease={} verb={} error={} next=\"retry every ~{}\"", lease_ref_,
                 verb, LogValue(status.ToString()), Fmt(options_.retry_period));
  }
}

std::string Elector::NextAction(MonoTime now) const {
  if (holding_) return absl::StrCat("renew every ~", Fmt(options_.retry_period));
  const MonoTime act = ActAt(now);
  if (act <= now) return "acquire now";
  if (record_ && !record_->holder_identity.empty() && !IsOurs(*record_)) {
    return absl::StrCat("follow; take over in ", Fmt(act - now), " unless it is renewed");
  }
  return absl::StrCat("leave it to others for ", Fmt(act - now), " after resigning");
}

absl::Time Elector::WallNow() const {
  return absl::FromUnixMicros(absl::ToUnixMicros(clock_->Wall()));
}

int32_t Elector::WrittenDurationSeconds() const {
  return static_cast<int32_t>(
      absl::ToInt64Seconds(absl::Ceil(options_.lease_duration, absl::Seconds(1))));
}

}  // namespace baton

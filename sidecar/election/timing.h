// The election's three durations (ElectionTiming, the one place their
// defaults live) and the safety margins of the Lease protocol: how long a
// holder may lead after a write, given what followers can see of it.
//
// A follower takes over when a Lease it has observed has not changed for
// leaseDurationSeconds on its own clock. Two things make that later in
// absolute terms than the holder's last write, and the holder must stop
// leading before the earliest of them:
//   * client-go compares Lease records at one-second resolution (renewTime
//     goes through metav1.Time, which serialises whole seconds), so a renew
//     inside the same second as the previous one looks like no change: a
//     client-go follower may be timing from a renew up to one second older
//     than the last one;
//   * the holder's and the follower's clocks may run at slightly different
//     rates (not offsets: those never matter), bounded here by
//     kMaxClockRateDrift.
// So a write sent at s grants its holder SafeLeadershipFor(leaseDuration)
// from s on its own clock, and nothing more — where s is read no later than
// the renewTime the write carries is stamped: the one-second argument relates
// the renewTimes followers see, so a holder that stamps first and stalls
// before reading s would count from past its own stamp.
#ifndef BATON_SIDECAR_ELECTION_TIMING_H_
#define BATON_SIDECAR_ELECTION_TIMING_H_

#include "absl/time/time.h"

namespace baton {

// The three durations of client-go's leader election, with its (and
// kube-controller-manager's) defaults.
struct ElectionTiming {
  // How long a holder promises to keep the Lease; written into the Lease.
  absl::Duration lease_duration = absl::Seconds(15);
  // A leader that has not renewed successfully for this long stops leading.
  absl::Duration renew_deadline = absl::Seconds(10);
  // Interval between attempts to acquire or renew (jittered by up to 20%).
  absl::Duration retry_period = absl::Seconds(2);
};

// The resolution at which client-go's LeaderElector sees a Lease change.
inline constexpr absl::Duration kRenewTimeResolution = absl::Seconds(1);
// The largest relative difference in clock rate between two nodes baton
// tolerates: 1 %, far above what NTP-disciplined clocks show (< 0.05 %).
inline constexpr double kMaxClockRateDrift = 0.01;

// How long after sending a write that puts `lease_duration` into the Lease
// its writer may lead: (lease_duration × (1 − drift) − resolution) ÷
// (1 + drift); zero or negative when the Lease grants nothing.
inline absl::Duration SafeLeadershipFor(absl::Duration lease_duration) {
  return (lease_duration * (1 - kMaxClockRateDrift) - kRenewTimeResolution) /
         (1 + kMaxClockRateDrift);
}

// How long after its acquiring write returned an elector must wait before it
// leads, when the state it acquired over may hide a term it never saw (no
// Lease, or no holder it saw released). That write leaves the hidden term's
// holder unable to renew, so the hidden term's last promise was made by a
// write sent before ours returned and lasts at most one renew deadline on its
// holder's clock: renew_deadline × (1 + drift) ÷ (1 − drift) on ours. Assumes
// the hidden holder's --renew-deadline is not longer than ours (a group that
// shares its configuration).
inline absl::Duration UnseenPromiseBound(absl::Duration renew_deadline) {
  // Whole milliseconds, rounded up: a readable wait in logs and tests.
  return absl::Ceil(renew_deadline * ((1 + kMaxClockRateDrift) / (1 - kMaxClockRateDrift)),
                    absl::Milliseconds(1));
}

}  // namespace baton

#endif  // BATON_SIDECAR_ELECTION_TIMING_H_

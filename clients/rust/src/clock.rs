//! The clock of the sidecar's deadlines.

use std::time::Duration;

/// Reads the node's `CLOCK_BOOTTIME`: the time since boot, counting time
/// spent suspended. The sidecar's `validUntilBoottime` deadlines are readings
/// of this clock, and the sidecar and the application share the node's
/// kernel, so such a deadline means the same instant in every container of
/// the Pod.
///
/// Off Linux there is no `CLOCK_BOOTTIME`; this reads `CLOCK_MONOTONIC`
/// instead, and answers count their validity from when they were asked for
/// rather than to the sidecar's deadline.
pub fn boottime() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(CLOCK, &mut ts) };
    // The clock exists on every kernel baton runs on (Linux >= 2.6.39);
    // failing to read it is a broken invariant, not a condition to handle.
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

/// Whether [`boottime`] reads the clock of the sidecar's deadlines, so that a
/// `validUntilBoottime` can be compared with it as sent.
pub(crate) const SHARES_SIDECAR_CLOCK: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// How long a watch waits on Tokio's timers (which, like `CLOCK_MONOTONIC`,
/// stop during a suspend) before it compares a guarantee with [`boottime`]
/// again, so that after a suspend a lapsed guarantee ends at once.
pub(crate) const CLOCK_RECHECK: Duration = Duration::from_millis(100);

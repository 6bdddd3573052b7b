// WallClockStep: steps this machine's CLOCK_REALTIME for a test and always
// puts it back.
//
// The constructor steps the wall clock by `step` (negative: back in time, as
// `date -s` or an NTP step does); the destructor sets it to where it would
// have been had it never been stepped: the time read just before the step
// plus the CLOCK_BOOTTIME elapsed since, so the machine loses no time (a few
// microseconds of reading error at most). Use it in a scope so that the
// clock is restored on every way out of the test, failures included.
//
// Stepping the wall clock needs CAP_SYS_TIME and affects every process on
// the machine (Linux has no per-process wall clock), so a test using it
// keeps the step short and runs alone (ctest label `clockstep`,
// RUN_SERIAL). CanStep() says whether this process may step the clock.
//
// Not thread-safe; one step at a time per process.
#ifndef BATON_SIDECAR_COMMON_TESTING_WALL_CLOCK_STEP_H_
#define BATON_SIDECAR_COMMON_TESTING_WALL_CLOCK_STEP_H_

#include <linux/capability.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "sidecar/common/errno_text.h"

namespace baton::testing {

class WallClockStep {
 public:
  // True if this process holds CAP_SYS_TIME in its effective set; otherwise
  // false, with the reason in `why_not`.
  static bool CanStep(std::string* why_not) {
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (syscall(SYS_capget, &header, data) != 0) {
      *why_not = absl::StrCat("capget: ", ErrnoText(errno));
      return false;
    }
    if ((data[CAP_SYS_TIME / 32].effective & (1u << (CAP_SYS_TIME % 32))) == 0) {
      *why_not =
          "this process lacks CAP_SYS_TIME, which stepping the wall clock needs; run it as "
          "root where that capability is not dropped (ctest -L clockstep)";
      return false;
    }
    return true;
  }

  // Steps CLOCK_REALTIME by `step`. ok() says whether it did; if not,
  // error() says why and the destructor does nothing.
  explicit WallClockStep(absl::Duration step) {
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_BOOTTIME, &boot_);
    wall_ = absl::TimeFromTimespec(wall);
    const timespec stepped = absl::ToTimespec(wall_ + step);
    if (clock_settime(CLOCK_REALTIME, &stepped) != 0) {
      error_ = absl::StrCat("clock_settime(CLOCK_REALTIME): ", ErrnoText(errno));
      return;
    }
    stepped_ = true;
  }

  // Restores the wall clock (see above).
  ~WallClockStep() {
    if (!stepped_) return;
    timespec boot;
    clock_gettime(CLOCK_BOOTTIME, &boot);
    const absl::Duration elapsed =
        absl::DurationFromTimespec(boot) - absl::DurationFromTimespec(boot_);
    const timespec restored = absl::ToTimespec(wall_ + elapsed);
    clock_settime(CLOCK_REALTIME, &restored);
  }

  WallClockStep(const WallClockStep&) = delete;
  WallClockStep& operator=(const WallClockStep&) = delete;

  bool ok() const { return stepped_; }
  const std::string& error() const { return error_; }

 private:
  absl::Time wall_;
  timespec boot_;
  bool stepped_ = false;
  std::string error_;
};

// Sleeps `d` on CLOCK_BOOTTIME, which no wall-clock step moves.
inline void SleepBoottime(absl::Duration d) {
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);
  const timespec until = absl::ToTimespec(absl::DurationFromTimespec(now) + d);
  while (clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
}

// Steps the wall clock by `step`, polls `done` every 5 ms (on
// CLOCK_BOOTTIME) until it holds or `within` has passed, and puts the clock
// back. Returns whether `done` held in time, or why the clock could not be
// stepped (then `done` was not polled).
inline absl::StatusOr<bool> StepWallClockAndAwait(absl::Duration step, absl::Duration within,
                                                  const std::function<bool()>& done) {
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);
  const absl::Duration give_up = absl::DurationFromTimespec(now) + within;
  WallClockStep stepped(step);
  if (!stepped.ok()) return absl::FailedPreconditionError(stepped.error());
  for (;;) {
    if (done()) return true;
    clock_gettime(CLOCK_BOOTTIME, &now);
    if (absl::DurationFromTimespec(now) >= give_up) return false;
    SleepBoottime(absl::Milliseconds(5));
  }
}

}  // namespace baton::testing

#endif  // BATON_SIDECAR_COMMON_TESTING_WALL_CLOCK_STEP_H_

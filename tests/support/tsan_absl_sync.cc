// ThreadSanitizer's view of Abseil's synchronization, for the TSan build of
// the tests (-DBATON_SANITIZE=thread links this into every test binary).
//
// Debian's Abseil is a shared library built without -fsanitize=thread, so
// its Mutex, CondVar and Notification compile without the TSan annotations
// they carry in an instrumented build (ABSL_INTERNAL_HAVE_TSAN_INTERFACE):
// TSan sees none of their happens-before edges and reports every access to
// an ABSL_GUARDED_BY field as a race. These definitions interpose on the
// library's exported functions (the executable's symbols win), call the
// library's own implementation (dlsym RTLD_NEXT), and tell TSan what it did:
// acquiring a mutex acquires its address, releasing it releases it, Notify
// releases the notification and a wait that saw it acquires it (not
// HasBeenNotified(), which is inline: a thread that learns of a notification
// only from it gets no edge). Accesses
// made inside the library while a thread waits (Abseil evaluating
// Conditions, which read guarded state under the mutex on the waiter's
// behalf) are not checked, as in an instrumented build.
//
// Abseil's runtime deadlock detector (Debian builds it in; bin/baton turns it
// off) keeps its lock graph under an internal SpinLock that TSan cannot see
// either, so it is turned off here as well.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void __tsan_ignore_thread_begin();
void __tsan_ignore_thread_end();
}

namespace {

// The library's definition of the function whose mangled name is `symbol`.
template <typename Fn>
Fn Real(const char* symbol) {
  void* fn = dlsym(RTLD_NEXT, symbol);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in Abseil\n", symbol);
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

#define BATON_REAL(type, symbol)               \
  static const auto real = Real<type>(symbol); \
  (void)0

void* Key(const void* p) { return const_cast<void*>(p); }

// Runs `fn` (a call into the library that may evaluate Conditions) without
// TSan checking the accesses it makes.
template <typename F>
auto Unchecked(F fn) {
  __tsan_ignore_thread_begin();
  auto result = fn();
  __tsan_ignore_thread_end();
  return result;
}

}  // namespace

// Accesses that uninstrumented libraries (gRPC, Abseil, Boost's compiled
// parts) make through intercepted calls such as memcpy, free or sendmsg are
// ordered by synchronization TSan cannot see; do not report them.
extern "C" const char* __tsan_default_options() { return "ignore_noninstrumented_modules=1"; }

namespace {

const bool kDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  __tsan_release(this);
  Unchecked([&] {
    real(this);
    return 0;
  });
}

void Mutex::ReaderUnlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  __tsan_release(this);
  Unchecked([&] {
    real(this);
    return 0;
  });
}

void Mutex::LockWhen(const Condition& cond) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*, const Condition&),
             "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  Unchecked([&] {
    real(this, cond);
    return 0;
  });
  __tsan_acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*, const Condition&),
             "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Unchecked([&] {
    real(this, cond);
    return 0;
  });
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond,
                                Duration timeout) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*, const Condition&, Duration),
             "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = Unchecked([&] { return real(this, cond, timeout); });
  __tsan_acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond,
                                 Time deadline) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*, const Condition&, Time),
             "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = Unchecked([&] { return real(this, cond, deadline); });
  __tsan_acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond,
                                      Duration timeout) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*, const Condition&, Duration),
             "_ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = Unchecked([&] { return real(this, cond, timeout); });
  __tsan_acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond,
                                       Time deadline) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*, const Condition&, Time),
             "_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = Unchecked([&] { return real(this, cond, deadline); });
  __tsan_acquire(this);
  return met;
}

void Mutex::Await(const Condition& cond) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(Mutex*, const Condition&), "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  __tsan_release(this);
  Unchecked([&] {
    real(this, cond);
    return 0;
  });
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond,
                             Duration timeout) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*, const Condition&, Duration),
             "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_release(this);
  const bool met = Unchecked([&] { return real(this, cond, timeout); });
  __tsan_acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(Mutex*, const Condition&, Time),
             "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_release(this);
  const bool met = Unchecked([&] { return real(this, cond, deadline); });
  __tsan_acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(void (*)(CondVar*, Mutex*), "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  Unchecked([&] {
    real(this, mu);
    return 0;
  });
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(CondVar*, Mutex*, Duration),
             "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = Unchecked([&] { return real(this, mu, timeout); });
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  BATON_REAL(bool (*)(CondVar*, Mutex*, Time),
             "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = Unchecked([&] { return real(this, mu, deadline); });
  __tsan_acquire(mu);
  return timed_out;
}

void Notification::Notify() {
  BATON_REAL(void (*)(Notification*), "_ZN4absl7debian312Notification6NotifyEv");
  __tsan_release(Key(this));
  Unchecked([&] {
    real(this);
    return 0;
  });
}

void Notification::WaitForNotification() const {
  BATON_REAL(void (*)(const Notification*),
             "_ZNK4absl7debian312Notification19WaitForNotificationEv");
  Unchecked([&] {
    real(this);
    return 0;
  });
  __tsan_acquire(Key(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  BATON_REAL(bool (*)(const Notification*, Duration),
             "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = Unchecked([&] { return real(this, timeout); });
  if (notified) __tsan_acquire(Key(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  BATON_REAL(bool (*)(const Notification*, Time),
             "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = Unchecked([&] { return real(this, deadline); });
  if (notified) __tsan_acquire(Key(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl

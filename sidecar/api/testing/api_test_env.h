// ApiTestEnv: what the local API's tests share: a fake clock, a publisher the
// test feeds, metrics, and the ApiContext the servers read, plus snapshots of
// the usual situations (leading, following, not yet observed).
#ifndef BATON_SIDECAR_API_TESTING_API_TEST_ENV_H_
#define BATON_SIDECAR_API_TESTING_API_TEST_ENV_H_

#include <string>

#include "sidecar/api/api_context.h"
#include "sidecar/api/metrics.h"
#include "sidecar/common/fake_clock.h"
#include "sidecar/election/leadership.h"

namespace baton::testing {

inline constexpr char kSelf[] = "pod-a_1234";
inline constexpr char kOther[] = "pod-b_5678";

// A sidecar that has not read its Lease yet.
inline Leadership Unobserved() {
  Leadership l;
  l.identity = kSelf;
  l.lease_name = "my-lease";
  l.lease_namespace = "apps";
  return l;
}

// This sidecar holds the Lease with `token`, guaranteed for `valid_for`.
inline Leadership Leading(const Clock& clock, int64_t token,
                          absl::Duration valid_for = absl::Seconds(10)) {
  Leadership l = Unobserved();
  l.observed = true;
  l.lease_uid = "uid-1";
  l.holder_identity = kSelf;
  l.holding = true;
  l.leader_until = clock.Monotonic() + valid_for;
  l.fencing_token = token;
  l.lease_duration_seconds = 15;
  l.acquire_time = clock.Wall() - absl::Seconds(30);
  l.renew_time = clock.Wall() - absl::Seconds(1);
  return l;
}

// Another sidecar (`holder`) holds the Lease with `token`.
inline Leadership Following(const Clock& clock, const std::string& holder, int64_t token) {
  Leadership l = Unobserved();
  l.observed = true;
  l.lease_uid = "uid-1";
  l.holder_identity = holder;
  l.fencing_token = token;
  l.lease_duration_seconds = 15;
  l.acquire_time = clock.Wall() - absl::Seconds(5);
  l.renew_time = clock.Wall() - absl::Seconds(1);
  return l;
}

struct ApiTestEnv {
  ApiTestEnv() : publisher(Unobserved()), metrics(&publisher, &clock) {
    context.publisher = &publisher;
    context.clock = &clock;
    context.metrics = &metrics;
  }

  FakeClock clock;
  LeadershipPublisher publisher;
  Metrics metrics;
  ApiContext context;
};

}  // namespace baton::testing

#endif  // BATON_SIDECAR_API_TESTING_API_TEST_ENV_H_

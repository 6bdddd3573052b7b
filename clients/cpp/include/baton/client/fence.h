// Fencing: the store side (Fence) and how a write carries its token.
//
// The pattern:
//   1. Right before each write the writer calls Client::RequireLeader(d), with
//      d the time the write needs; a follower gets kFailedPrecondition.
//   2. The writer sends the token with the write: a field of the request, the
//      kTokenHeader HTTP header, or the kTokenMetadataKey gRPC metadata.
//   3. The store keeps the highest token it has admitted and refuses a lower
//      one, atomically with the write (Fence::Admit).
// Step 3 is what makes it safe: a deposed leader may not know yet that it was
// deposed, and its write may already be on its way.
//
// Two tokens, one per store (never both in one Fence):
//   * Leadership::fencing_token (the Lease's leaseTransitions) grows across
//     leaders as far as any running sidecar has seen; if the Lease is deleted
//     while every sidecar restarts, it starts again from 0.
//   * Leadership::fencing_revision (the resourceVersion of the write that won
//     the term) keeps growing even then, because it comes from the API
//     server's own counter; that is guaranteed on Kubernetes >= 1.35 only
//     (KEP-5504: resourceVersions of one resource type are comparable
//     integers). It is an integer of up to 128 bits (KEP-5504), so an
//     absl::uint128, as is every value a Fence holds. Carry it in
//     kRevisionHeader / kRevisionMetadataKey (FormatRevision). 0 means the
//     sidecar did not know one; a Fence refuses it once any revision was
//     admitted.
#ifndef BATON_CLIENT_FENCE_H_
#define BATON_CLIENT_FENCE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace baton::client {

// The HTTP header, and the gRPC metadata key, that carry a fencing token.
inline constexpr absl::string_view kTokenHeader = "Baton-Fencing-Token";
inline constexpr absl::string_view kTokenMetadataKey = "baton-fencing-token";
// The same for a fencing revision.
inline constexpr absl::string_view kRevisionHeader = "Baton-Fencing-Revision";
inline constexpr absl::string_view kRevisionMetadataKey = "baton-fencing-revision";

// Parses a token as written in kTokenHeader: a non-negative 32-bit decimal
// integer; kInvalidArgument otherwise.
absl::StatusOr<int32_t> ParseToken(absl::string_view text);

// Parses a revision as written in kRevisionHeader: decimal digits of an
// integer up to 2^128-1, without sign or leading zero; kInvalidArgument
// otherwise.
absl::StatusOr<absl::uint128> ParseRevision(absl::string_view text);

// The text of kRevisionHeader for `revision`: its decimal digits.
std::string FormatRevision(absl::uint128 revision);

// The store side of fencing for one Lease: remembers the highest token (or
// revision: compared as integers the same way, over the full 128 bits)
// admitted and refuses lower ones; equal ones are admitted (the same leader
// writing again). Thread-safe. A token (int32_t, never negative) converts to
// absl::uint128 as it is.
//
// Admit must be atomic with the write it guards: hold the store's own lock or
// transaction across both. A store that persists its data should persist
// Highest() with it and construct the Fence with it after a restart.
class Fence {
 public:
  explicit Fence(std::optional<absl::uint128> highest = std::nullopt) : highest_(highest) {}

  // Records `token`; kAborted (recording nothing) if a higher token was
  // admitted before: the writer is a deposed leader.
  absl::Status Admit(absl::uint128 token) ABSL_LOCKS_EXCLUDED(mu_);

  // The highest admitted token; nullopt before the first.
  std::optional<absl::uint128> Highest() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::optional<absl::uint128> highest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace baton::client

#endif  // BATON_CLIENT_FENCE_H_

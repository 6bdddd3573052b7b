package io.github.batonsidecar.baton;

import java.math.BigInteger;
import java.util.Objects;
import java.util.Optional;

/**
 * {@link Fence} for fencing revisions ({@link Leadership#fencingRevision()}, the resourceVersion
 * of the write that won the term, an integer of up to 128 bits): refuses a revision below the
 * highest admitted, compared as integers. Use one kind per store, never both in one fence.
 * Thread-safe; {@link #admit} must be atomic with the write, as for {@link Fence}.
 *
 * <p>Revisions keep growing even after the Lease is deleted and every sidecar restarted, because
 * they come from the API server's own counter; that is guaranteed only on Kubernetes 1.35 or later
 * (KEP-5504: resourceVersions of one resource type are comparable integers). On older servers use
 * {@link Fence}. A revision of 0 means the sidecar did not know one: it is refused once any
 * revision was admitted.
 */
public final class RevisionFence {
  private BigInteger highest; // guarded by this; null before the first

  /**
   * Accepts {@code revision} if no higher one was admitted before, and records it.
   *
   * @throws StaleRevisionException if a higher revision was admitted (nothing is recorded)
   */
  public synchronized void admit(BigInteger revision) {
    Objects.requireNonNull(revision);
    if (highest != null && revision.compareTo(highest) < 0) {
      throw new StaleRevisionException(revision, highest);
    }
    highest = revision;
  }

  /** The highest admitted revision; empty before the first. */
  public synchronized Optional<BigInteger> highest() {
    return Optional.ofNullable(highest);
  }
}

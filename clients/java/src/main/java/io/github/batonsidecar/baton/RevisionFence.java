package io.github.batonsidecar.baton;

import java.util.OptionalLong;

/**
 * {@link Fence} for fencing revisions ({@link Leadership#fencingRevision()}, the resourceVersion
 * of the write that won the term): refuses a revision below the highest admitted, compared as
 * integers. Use one kind per store, never both in one fence. Thread-safe; {@link #admit} must be
 * atomic with the write, as for {@link Fence}.
 *
 * <p>Revisions keep growing even after the Lease is deleted and every sidecar restarted, because
 * they come from the API server's own counter; that is guaranteed only on Kubernetes 1.35 or later
 * (KEP-5504: resourceVersions of one resource type are comparable integers). On older servers use
 * {@link Fence}. A revision of 0 means the sidecar did not know one: it is refused once any
 * revision was admitted.
 */
public final class RevisionFence {
  private boolean seen; // guarded by this
  private long highest; // guarded by this

  /**
   * Accepts {@code revision} if no higher one was admitted before, and records it.
   *
   * @throws StaleRevisionException if a higher revision was admitted (nothing is recorded)
   */
  public synchronized void admit(long revision) {
    if (seen && revision < highest) {
      throw new StaleRevisionException(revision, highest);
    }
    seen = true;
    highest = revision;
  }

  /** The highest admitted revision; empty before the first. */
  public synchronized OptionalLong highest() {
    return seen ? OptionalLong.of(highest) : OptionalLong.empty();
  }
}

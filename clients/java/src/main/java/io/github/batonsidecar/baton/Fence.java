package io.github.batonsidecar.baton;

import java.util.OptionalInt;

/**
 * The store side of fencing for one Lease: remembers the highest fencing token it has admitted
 * and refuses lower ones. Equal tokens are admitted (the same leader writing again). Thread-safe.
 *
 * <p>{@link #admit} must be atomic with the write it guards: hold the store's own lock (or
 * transaction) across {@code admit} and the write, or a stale write can slip in between. A store
 * that persists its data should persist {@link #highest()} with it and admit the persisted value
 * once after a restart.
 *
 * <p>The token ({@link Leadership#fencingToken()}, the Lease's leaseTransitions) grows across
 * leaders as far as any running sidecar has seen. If the Lease is deleted while every sidecar is
 * restarted, it starts again from 0 and this fence refuses the new leader; use a {@link
 * RevisionFence} where that matters.
 */
public final class Fence {
  private boolean seen; // guarded by this
  private int highest; // guarded by this

  /**
   * Accepts {@code token} if no higher one was admitted before, and records it.
   *
   * @throws StaleTokenException if a higher token was admitted (nothing is recorded)
   */
  public synchronized void admit(int token) {
    if (seen && token < highest) {
      throw new StaleTokenException(token, highest);
    }
    seen = true;
    highest = token;
  }

  /** The highest admitted token; empty before the first. */
  public synchronized OptionalInt highest() {
    return seen ? OptionalInt.of(highest) : OptionalInt.empty();
  }
}

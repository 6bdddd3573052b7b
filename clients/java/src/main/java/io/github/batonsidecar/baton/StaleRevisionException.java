package io.github.batonsidecar.baton;

import java.math.BigInteger;

/**
 * A {@link RevisionFence}'s refusal of a write from a deposed leader: a higher revision was
 * admitted.
 */
public final class StaleRevisionException extends BatonException {
  private static final long serialVersionUID = 1L;

  private final BigInteger revision;
  private final BigInteger highest;

  StaleRevisionException(BigInteger revision, BigInteger highest) {
    super("baton: stale fencing revision " + revision + ": a write with revision " + highest
        + " was already accepted");
    this.revision = revision;
    this.highest = highest;
  }

  /** The refused revision. */
  public BigInteger revision() {
    return revision;
  }

  /** The highest revision the fence has admitted. */
  public BigInteger highest() {
    return highest;
  }
}

package io.github.batonsidecar.baton;

/**
 * A {@link RevisionFence}'s refusal of a write from a deposed leader: a higher revision was
 * admitted.
 */
public final class StaleRevisionException extends BatonException {
  private static final long serialVersionUID = 1L;

  private final long revision;
  private final long highest;

  StaleRevisionException(long revision, long highest) {
    super("baton: stale fencing revision " + revision + ": a write with revision " + highest
        + " was already accepted");
    this.revision = revision;
    this.highest = highest;
  }

  /** The refused revision. */
  public long revision() {
    return revision;
  }

  /** The highest revision the fence has admitted. */
  public long highest() {
    return highest;
  }
}

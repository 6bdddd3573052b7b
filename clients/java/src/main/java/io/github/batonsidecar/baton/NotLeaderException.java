package io.github.batonsidecar.baton;

import java.time.Duration;

/**
 * {@link BatonClient#requireLeader}'s answer when this pod must not write: it does not lead, or
 * not with the validity that was asked for left.
 */
public final class NotLeaderException extends BatonException {
  private static final long serialVersionUID = 1L;

  private final transient Leadership leadership;
  private final Duration minValidity;
  private final Duration remaining;

  NotLeaderException(Leadership leadership, Duration minValidity, Duration remaining) {
    super(reason(leadership, minValidity, remaining));
    this.leadership = leadership;
    this.minValidity = minValidity;
    this.remaining = remaining;
  }

  /** The state the decision was made on. */
  public Leadership leadership() {
    return leadership;
  }

  /** The remaining validity that was asked for. */
  public Duration minValidity() {
    return minValidity;
  }

  /** The validity that was left (zero when not leader). */
  public Duration remaining() {
    return remaining;
  }

  private static String reason(Leadership l, Duration minValidity, Duration remaining) {
    if (l.isLeader()) {
      return "baton: leader, but only " + remaining.toMillis() + "ms of guaranteed leadership left"
          + " (" + minValidity.toMillis() + "ms needed)";
    }
    if (!l.observed()) {
      return "baton: not leader: the sidecar has not read the Lease yet";
    }
    if (l.steppingDown()) {
      return "baton: not leader: the sidecar is stepping down";
    }
    if (l.holderIdentity().isEmpty()) {
      return "baton: not leader: the Lease has no holder";
    }
    if (l.holderIdentity().equals(l.identity())) {
      return "baton: not leader: the renew deadline passed";
    }
    return "baton: not leader: the Lease is held by " + l.holderIdentity();
  }
}

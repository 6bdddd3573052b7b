package io.github.batonsidecar.baton;

/** A {@link Fence}'s refusal of a write from a deposed leader: a higher token was admitted. */
public final class StaleTokenException extends BatonException {
  private static final long serialVersionUID = 1L;

  private final int token;
  private final int highest;

  StaleTokenException(int token, int highest) {
    super("baton: stale fencing token " + token + ": a write with token " + highest
        + " was already accepted");
    this.token = token;
    this.highest = highest;
  }

  /** The refused token. */
  public int token() {
    return token;
  }

  /** The highest token the fence has admitted. */
  public int highest() {
    return highest;
  }
}

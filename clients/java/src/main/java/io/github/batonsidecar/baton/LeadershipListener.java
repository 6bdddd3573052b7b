package io.github.batonsidecar.baton;

/**
 * What a {@link BatonClient#watch watch} tells the application. Calls come one at a time, in
 * order, on the watch's own thread; keep them short (hand long work to another thread), since the
 * next state waits for them.
 */
public interface LeadershipListener {
  /**
   * The current state: the first one after (re)connecting, then each change of leader, holder,
   * token, stepping-down, observed or Lease uid (not every renew), and a leader state turned
   * follower when its guarantee ran out without news from the sidecar.
   */
  void onLeadership(Leadership state);

  /**
   * The sidecar cannot be reached, the stream broke or went silent, or the sidecar serves another
   * Lease ({@link WrongLeaseException}). Until the next {@link #onLeadership}, act as a follower;
   * the watch reconnects with backoff by itself. The default does nothing.
   */
  default void onError(BatonException error) {}
}

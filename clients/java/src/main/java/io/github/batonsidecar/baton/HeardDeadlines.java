package io.github.batonsidecar.baton;

import java.time.Duration;

/**
 * The latest deadline among the leader answers one client has received in the latest term it
 * heard of: what its acknowledgement of that term names. Thread-safe.
 */
final class HeardDeadlines {
  private String identity = "";
  private int fencingToken;
  private Duration deadline = Duration.ZERO;

  /**
   * Records the deadline of {@code l} if it is a leader answer whose deadline is the sidecar's own
   * (on another clock than the sidecar's, a deadline is a local estimate and names nothing there).
   *
   * @return {@code l}
   */
  synchronized Leadership note(Leadership l) {
    if (!l.isLeader() || l.validUntilBoottime().isZero() || !Boottime.sharesSidecarClock()) {
      return l;
    }
    if (!identity.equals(l.identity()) || fencingToken != l.fencingToken()) {
      identity = l.identity();
      fencingToken = l.fencingToken();
      deadline = l.validUntilBoottime();
      return l;
    }
    if (l.validUntilBoottime().compareTo(deadline) > 0) {
      deadline = l.validUntilBoottime();
    }
    return l;
  }

  /** The latest deadline heard in the term {@code token}; zero if none. */
  synchronized Duration upTo(int token) {
    return fencingToken == token ? deadline : Duration.ZERO;
  }

  /** {@code d} as a proto3 JSON Duration ({@code "12345.678901234s"}). */
  static String json(Duration d) {
    return String.format(java.util.Locale.ROOT, "%d.%09ds", d.getSeconds(), d.getNano());
  }
}

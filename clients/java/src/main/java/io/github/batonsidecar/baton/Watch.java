package io.github.batonsidecar.baton;

/**
 * A running {@link BatonClient#watch watch}. Closing it stops it: once {@link #close()} has
 * returned (on any thread but the watch's own), its listener is not called again.
 */
public interface Watch extends AutoCloseable {
  /** Stops the watch; idempotent. */
  @Override
  void close();
}

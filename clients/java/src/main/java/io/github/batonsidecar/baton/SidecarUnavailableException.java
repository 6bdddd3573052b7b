package io.github.batonsidecar.baton;

/**
 * No baton sidecar answered at {@link #address()}: nothing listens there, it restarts, it is
 * paused, or it is shutting down. Act as a follower; the client reconnects by itself (with backoff)
 * when the sidecar is back, and a watch goes on through the outage.
 */
public final class SidecarUnavailableException extends BatonException {
  private static final long serialVersionUID = 1L;

  private final String address;

  SidecarUnavailableException(String address, String reason, Throwable cause, io.grpc.Status status) {
    this(address, BatonClient.ENV_GRPC_ADDR, reason, cause, status, 0);
  }

  SidecarUnavailableException(String address, String envVar, String reason, Throwable cause,
      io.grpc.Status status, int httpStatus) {
    super("baton: no sidecar answering at " + address + " (is the baton container running, and is $"
        + envVar + " right?): " + reason, cause, status, httpStatus);
    this.address = address;
  }

  /** The sidecar address that did not answer. */
  public String address() {
    return address;
  }
}

package io.github.batonsidecar.baton;

/**
 * The base of every exception the baton client throws. Whatever the subclass, the application
 * must act as a follower when it sees one: an error never means "leader".
 *
 * <p>Unchecked, as gRPC's own {@code StatusRuntimeException} is; the subclasses say what happened
 * ({@link SidecarUnavailableException}, {@link NotLeaderException}, {@link WrongLeaseException},
 * {@link StaleTokenException}, {@link StaleRevisionException}). A plain {@code BatonException} is
 * any other failure: a sidecar's refusal (its status is in {@link #status()} or {@link
 * #httpStatus()}), an answer that
 * cannot be parsed, or an interrupted call.
 */
public class BatonException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient io.grpc.Status status;
  private final int httpStatus;

  public BatonException(String message) {
    this(message, null, null, 0);
  }

  public BatonException(String message, Throwable cause) {
    this(message, cause, null, 0);
  }

  BatonException(String message, Throwable cause, io.grpc.Status status, int httpStatus) {
    super(message, cause);
    this.status = status;
    this.httpStatus = httpStatus;
  }

  /** The sidecar's gRPC status when a gRPC call failed with one, else null. */
  public io.grpc.Status status() {
    return status;
  }

  /** The sidecar's HTTP status when an HTTP request ({@link BatonHttpClient}) got one, else 0. */
  public int httpStatus() {
    return httpStatus;
  }
}

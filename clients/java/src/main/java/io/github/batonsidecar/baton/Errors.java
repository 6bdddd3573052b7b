package io.github.batonsidecar.baton;

import io.grpc.Status;
import java.util.EnumSet;
import java.util.Set;

/** The one mapping from a failed gRPC call to the client's exceptions. */
final class Errors {
  /**
   * The codes that mean "no usable sidecar at this address": nothing listens or it restarts
   * (UNAVAILABLE), it is paused or wedged (DEADLINE_EXCEEDED), something else listens
   * (UNIMPLEMENTED), or the transport dropped the call (CANCELLED).
   */
  static final Set<Status.Code> UNAVAILABLE = EnumSet.of(Status.Code.UNAVAILABLE,
      Status.Code.DEADLINE_EXCEEDED, Status.Code.UNIMPLEMENTED, Status.Code.CANCELLED);

  private Errors() {}

  /** The exception for a call to {@code address} that failed with {@code t}. */
  static BatonException translate(String address, Throwable t) {
    if (t instanceof BatonException b) {
      return b;
    }
    Status status = Status.fromThrowable(t);
    if (status.getCause() instanceof InterruptedException) {
      // The calling thread was interrupted: its own cancellation, not the sidecar's failure.
      return new BatonException("baton: interrupted", t, status, 0);
    }
    String reason = status.getCode() + (status.getDescription() != null
        ? ": " + status.getDescription() : "");
    if (UNAVAILABLE.contains(status.getCode())) {
      return new SidecarUnavailableException(address, reason, t, status);
    }
    return new BatonException("baton: " + address + ": " + reason, t, status, 0);
  }

  /**
   * The exception for an HTTP request to {@code address} that got no answer: refused, timed out
   * ({@link java.net.http.HttpTimeoutException}) or broken. All mean "no usable sidecar".
   */
  static BatonException translateHttp(String address, Throwable t) {
    while (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof BatonException b) {
      return b;
    }
    if (t instanceof java.io.IOException) {
      return new SidecarUnavailableException(address, BatonHttpClient.ENV_HTTP_ADDR,
          t.toString(), t, null, 0);
    }
    return new BatonException("baton: " + address + ": " + t, t);
  }

  /**
   * The exception for an HTTP answer with a status other than 200: 503 (shutting down, or the
   * sidecar's connection limit) means "no usable sidecar", anything else is a refusal.
   */
  static BatonException httpStatus(String address, int status, String body) {
    String reason = "HTTP " + status + ": " + body.strip();
    if (status == 503) {
      return new SidecarUnavailableException(address, BatonHttpClient.ENV_HTTP_ADDR, reason, null,
          null, status);
    }
    return new BatonException("baton: " + address + ": " + reason, null, null, status);
  }
}

package io.github.batonsidecar.baton;

import java.math.BigInteger;
import java.net.http.HttpRequest;

/**
 * The HTTP headers that carry a fencing token or revision with a write, so a store behind HTTP
 * can check it ({@link Fence}, {@link RevisionFence}). The values are decimal integers: a token of
 * 32 bits, a revision of up to 128 bits ({@link BigInteger}).
 *
 * <pre>{@code
 * // writer
 * HttpRequest put = FencingHeaders.withToken(HttpRequest.newBuilder(uri), token).PUT(body).build();
 * // store
 * fence.admit(FencingHeaders.parseToken(exchange.getRequestHeaders().getFirst(FencingHeaders.TOKEN)));
 * }</pre>
 */
public final class FencingHeaders {
  /** The header of a fencing token ({@link Leadership#fencingToken()}). */
  public static final String TOKEN = "Baton-Fencing-Token";
  /** The header of a fencing revision ({@link Leadership#fencingRevision()}). */
  public static final String REVISION = "Baton-Fencing-Revision";

  private FencingHeaders() {}

  /** The header value of a token. */
  public static String formatToken(int token) {
    return Integer.toString(token);
  }

  /** The header value of a revision: its decimal digits. */
  public static String formatRevision(BigInteger revision) {
    return revision.toString();
  }

  /** Tags an outgoing write with a fencing token. */
  public static HttpRequest.Builder withToken(HttpRequest.Builder request, int token) {
    return request.setHeader(TOKEN, formatToken(token));
  }

  /** Tags an outgoing write with a fencing revision. */
  public static HttpRequest.Builder withRevision(HttpRequest.Builder request,
      BigInteger revision) {
    return request.setHeader(REVISION, formatRevision(revision));
  }

  /**
   * Reads a {@link #TOKEN} header value.
   *
   * @param value the header's value, null when the header is missing
   * @throws BatonException when it is missing or not a non-negative 32-bit decimal integer
   */
  public static int parseToken(String value) {
    present(TOKEN, value);
    // Digits only: Long.parseLong would also take a sign.
    boolean digits = value.length() <= 19 && value.chars().allMatch(c -> c >= '0' && c <= '9');
    long v = -1;
    if (digits) {
      try {
        v = Long.parseLong(value);
      } catch (NumberFormatException e) {
        v = -1; // over 2^63-1
      }
    }
    if (v < 0 || v > Integer.MAX_VALUE) {
      throw new BatonException("baton: " + TOKEN + " \"" + value + "\" is not a fencing token");
    }
    return (int) v;
  }

  /**
   * Reads a {@link #REVISION} header value.
   *
   * @param value the header's value, null when the header is missing
   * @throws BatonException when it is missing or not decimal digits (no sign, no leading zero) of
   *     at most 2<sup>128</sup>-1
   */
  public static BigInteger parseRevision(String value) {
    present(REVISION, value);
    BigInteger v = Revisions.parse(value);
    if (v == null) {
      throw new BatonException("baton: " + REVISION + " \"" + value
          + "\" is not a fencing revision");
    }
    return v;
  }

  /** Refuses a missing (null) or empty header {@code name}. */
  private static void present(String name, String value) {
    if (value == null || value.isEmpty()) {
      throw new BatonException("baton: missing " + name + " header");
    }
  }
}

package io.github.batonsidecar.baton;

/**
 * The sidecar that answered serves another Lease than the one this client was told to expect
 * ({@link BatonClient.Builder#expectLease}): with two sidecars in one network namespace
 * ({@code hostNetwork}), the application is talking to another workload's sidecar. Its answers are
 * refused, so they can never make this application leader.
 */
public final class WrongLeaseException extends BatonException {
  private static final long serialVersionUID = 1L;

  private final String expected;
  private final String served;

  WrongLeaseException(String address, String expected, String served) {
    super("baton: the sidecar at " + address + " serves Lease " + served + ", not the expected "
        + expected + " (another workload's sidecar on this address?)");
    this.expected = expected;
    this.served = served;
  }

  /** The Lease this client expects, as {@code namespace/name} ({@code *} for any namespace). */
  public String expectedLease() {
    return expected;
  }

  /** The Lease the sidecar serves, as {@code namespace/name}. */
  public String servedLease() {
    return served;
  }
}

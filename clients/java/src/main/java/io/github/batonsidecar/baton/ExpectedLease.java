package io.github.batonsidecar.baton;

/**
 * The Lease a client was told to expect ({@link BatonClient.Builder#expectLease}): answers of a
 * sidecar that serves another are refused.
 *
 * @param namespace the expected namespace, null for any
 * @param name the expected name, null for any
 */
record ExpectedLease(String namespace, String name) {
  static final ExpectedLease ANY = new ExpectedLease(null, null);

  boolean isAny() {
    return namespace == null && name == null;
  }

  /** {@code l} if it comes from a sidecar of this Lease, else a WrongLeaseException. */
  Leadership check(String address, Leadership l) {
    boolean nameOk = name == null || name.equals(l.leaseName());
    boolean namespaceOk = namespace == null || namespace.equals(l.leaseNamespace());
    if (!nameOk || !namespaceOk) {
      String expected = (namespace != null ? namespace : "*") + "/" + (name != null ? name : "*");
      throw new WrongLeaseException(address, expected, l.lease());
    }
    return l;
  }
}

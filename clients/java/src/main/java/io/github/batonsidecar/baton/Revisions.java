package io.github.batonsidecar.baton;

import java.math.BigInteger;

/**
 * The decimal form of a fencing revision: a Kubernetes resourceVersion, an integer from 0 to
 * 2<sup>128</sup>-1 (KEP-5504). One rule for the sidecar's answers and the {@link
 * FencingHeaders#REVISION} header.
 */
final class Revisions {
  /** 2<sup>128</sup>-1, the largest revision. */
  static final BigInteger MAX = BigInteger.ONE.shiftLeft(128).subtract(BigInteger.ONE);

  private Revisions() {}

  /**
   * The revision {@code digits} spells, or null if it is not one: decimal ASCII digits only, no
   * sign, no leading zero (but "0" itself), at most {@link #MAX}.
   */
  static BigInteger parse(String digits) {
    boolean decimal = !digits.isEmpty()
        && digits.length() <= 39 // MAX's length
        && (digits.length() == 1 || digits.charAt(0) != '0')
        && digits.chars().allMatch(c -> c >= '0' && c <= '9');
    if (!decimal) {
      return null;
    }
    BigInteger v = new BigInteger(digits);
    return v.compareTo(MAX) <= 0 ? v : null;
  }
}

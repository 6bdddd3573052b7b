package io.github.batonsidecar.baton;

import baton.v1.LeaderElectionOuterClass;
import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.util.JsonFormat;
import java.io.IOException;
import java.io.StringReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * What the sidecar reported at one moment. {@link #NONE} means "not leader, nothing known", which
 * is also what an application must assume while the sidecar cannot be reached.
 *
 * @param isLeader this pod held the Lease, within its renew deadline, when the sidecar produced
 *     this answer
 * @param identity this sidecar's holder identity (new for every sidecar process)
 * @param holderIdentity the Lease's holder as last observed; empty when nobody holds it
 * @param fencingToken the token to tag writes with while {@code isLeader} (the Lease's
 *     leaseTransitions at this holder's acquisition); otherwise the last observed leaseTransitions
 * @param fencingRevision the second fencing token: the Lease's resourceVersion as written by the
 *     write that won this term while {@code isLeader}, otherwise that of the last observed Lease;
 *     an integer from 0 to 2<sup>128</sup>-1 (KEP-5504), compared as an integer. It keeps growing
 *     across Lease deletion and a restart of every sidecar, but is comparable only on Kubernetes
 *     1.35 or later (see {@link RevisionFence}); 0 when unknown
 * @param leaseName the Lease's name
 * @param leaseNamespace the Lease's namespace
 * @param leaseUid the Lease's metadata.uid; changes when it is deleted and recreated
 * @param acquireTime the Lease's acquireTime (the holder's wall clock), if known; information only
 * @param renewTime the Lease's renewTime (the holder's wall clock), if known; information only
 * @param validFor how much longer leadership was guaranteed when the sidecar produced the answer;
 *     zero when not leader
 * @param validUntilBoottime when that guarantee ends, as a reading of the node's {@code
 *     CLOCK_BOOTTIME} ({@link Boottime}): the sidecar's own deadline, exact however long the answer
 *     took to arrive. From an older sidecar that sends none, counted from when the request was sent
 *     (or a watch message arrived). Zero when not leader. {@link #remaining()} compares it with the
 *     clock
 * @param leaseDuration the Lease's leaseDurationSeconds; zero when unknown
 * @param observed the sidecar has read the Lease (or its absence) at least once
 * @param steppingDown the sidecar is shutting down or resigning; it never leads again in this term
 */
public record Leadership(
    boolean isLeader,
    String identity,
    String holderIdentity,
    int fencingToken,
    BigInteger fencingRevision,
    String leaseName,
    String leaseNamespace,
    String leaseUid,
    Optional<Instant> acquireTime,
    Optional<Instant> renewTime,
    Duration validFor,
    Duration validUntilBoottime,
    Duration leaseDuration,
    boolean observed,
    boolean steppingDown) {

  /** Not leader, nothing known. */
  public static final Leadership NONE = new Leadership(false, "", "", 0, BigInteger.ZERO,
      "", "", "", Optional.empty(), Optional.empty(), Duration.ZERO, Duration.ZERO, Duration.ZERO,
      false, false);

  public Leadership {
    Objects.requireNonNull(identity);
    Objects.requireNonNull(holderIdentity);
    Objects.requireNonNull(fencingRevision);
    Objects.requireNonNull(leaseName);
    Objects.requireNonNull(leaseNamespace);
    Objects.requireNonNull(leaseUid);
    Objects.requireNonNull(acquireTime);
    Objects.requireNonNull(renewTime);
    Objects.requireNonNull(validFor);
    Objects.requireNonNull(validUntilBoottime);
    Objects.requireNonNull(leaseDuration);
  }

  /**
   * How much guaranteed leadership is left now, on {@code CLOCK_BOOTTIME} ({@link
   * Boottime#ceiling()}): zero when not leader or when the guarantee has run out.
   */
  public Duration remaining() {
    return remainingAt(Boottime.ceiling());
  }

  /**
   * How much guaranteed leadership is left at the {@code CLOCK_BOOTTIME} reading {@code now}: zero
   * when not leader or when the guarantee has run out by then.
   */
  public Duration remainingAt(Duration now) {
    if (!isLeader || validUntilBoottime.isZero() || now.compareTo(validUntilBoottime) >= 0) {
      return Duration.ZERO;
    }
    return validUntilBoottime.minus(now);
  }

  /**
   * The server-side-apply field manager for Kubernetes writes made under this answer's
   * leadership: the sidecar's holder identity, or {@code ""} for a state without one. Every
   * sidecar process has an identity of its own, so every term has a manager of its own. Leader
   * work that writes Kubernetes objects takes its fields over once at the start of the term
   * ({@code force: true}) and applies every later write without force; then if two pods believe
   * they lead at once, the one whose fields were taken over gets 409 Conflict naming the other's
   * manager instead of silently overwriting its writes.
   *
   * <p>The API server takes at most 128 printable characters: an identity that is longer, or has
   * anything but printable ASCII, becomes its first 111 UTF-8 bytes (others replaced by {@code
   * _}), {@code -} and the 16 hex digits of its 64-bit FNV-1a hash, the same in every baton
   * client.
   */
  public String fieldManager() {
    final int max = 128;
    byte[] id = identity.getBytes(StandardCharsets.UTF_8);
    boolean printable = id.length <= max;
    for (byte b : id) {
      printable &= b >= 0x20 && b <= 0x7e;
    }
    if (printable) {
      return identity;
    }
    long hash = 0xcbf29ce484222325L;
    for (byte b : id) {
      hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < Math.min(id.length, max - 17); i++) {
      out.append(id[i] >= 0x20 && id[i] <= 0x7e ? (char) id[i] : '_');
    }
    return out.append('-').append(String.format("%016x", hash)).toString();
  }

  /** The Lease as {@code namespace/name}. */
  public String lease() {
    return leaseNamespace + "/" + leaseName;
  }

  /**
   * Converts the proto3 JSON of a Leadership, the body of the sidecar's {@code GET /leader}, for
   * an application that asks over HTTP itself. {@code sentAt} is the {@link Boottime#floor()}
   * reading taken before the request was sent: the validity of an answer from an older sidecar,
   * which sends no {@code validUntilBoottime}, counts from then.
   *
   * @throws BatonException if {@code json} is not a Leadership (never turned into a leader)
   */
  public static Leadership fromJson(String json, Duration sentAt) {
    LeaderElectionOuterClass.Leadership.Builder b = LeaderElectionOuterClass.Leadership.newBuilder();
    try {
      JsonFormat.parser().ignoringUnknownFields().merge(strictJson(json).toString(), b);
    } catch (IOException | RuntimeException e) {
      throw new BatonException("baton: not a Leadership JSON answer: " + e.getMessage(), e);
    }
    return fromProto(b.build(), sentAt);
  }

  /**
   * {@code json} as a JSON object whose known fields have the JSON types proto3 JSON prints.
   * JsonFormat alone would take more: a string "true" for a bool, a number for a string field,
   * and JSON syntax errors that Gson's lenient mode forgives; an answer like that is not from a
   * sidecar, and must not be turned into a leader.
   */
  private static JsonObject strictJson(String json) throws IOException {
    JsonReader reader = new JsonReader(new StringReader(json));
    reader.setStrictness(Strictness.STRICT);
    JsonElement root = new Gson().getAdapter(JsonElement.class).read(reader);
    if (reader.peek() != JsonToken.END_DOCUMENT) {
      throw new IOException("more than one JSON value");
    }
    if (!root.isJsonObject()) {
      throw new IOException("not a JSON object");
    }
    JsonObject object = root.getAsJsonObject();
    for (FieldDescriptor f : LeaderElectionOuterClass.Leadership.getDescriptor().getFields()) {
      for (String name : new String[] {f.getJsonName(), f.getName()}) {
        JsonElement v = object.get(name);
        if (v == null || v.isJsonNull()) {
          continue;
        }
        boolean ok = v.isJsonPrimitive() && switch (f.getJavaType()) {
          case BOOLEAN -> v.getAsJsonPrimitive().isBoolean();
          case INT, LONG -> v.getAsJsonPrimitive().isNumber() || v.getAsJsonPrimitive().isString();
          default -> v.getAsJsonPrimitive().isString(); // strings, Durations, Timestamps
        };
        if (!ok) {
          throw new IOException("field " + name + ": unexpected JSON " + v);
        }
      }
    }
    return object;
  }

  /**
   * Converts a baton.v1.Leadership message. {@code since} is when its validity starts counting if
   * the sidecar sent no deadline of its own (or its clock is not this one, see {@link
   * Boottime#sharesSidecarClock()}).
   *
   * @throws BatonException if its fencing revision is malformed (never turned into a leader)
   */
  static Leadership fromProto(LeaderElectionOuterClass.Leadership m, Duration since) {
    boolean leader = m.getIsLeader();
    Duration validFor = Duration.ZERO;
    Duration validUntil = Duration.ZERO;
    if (leader) {
      validFor = duration(m.getValidFor());
      Duration deadline = duration(m.getValidUntilBoottime());
      boolean sidecarDeadline = deadline.compareTo(Duration.ZERO) > 0 && Boottime.sharesSidecarClock();
      validUntil = sidecarDeadline ? deadline : since.plus(validFor);
    }
    return new Leadership(
        leader,
        m.getIdentity(),
        m.getHolderIdentity(),
        m.getFencingToken(),
        fencingRevision(m),
        m.getLeaseName(),
        m.getLeaseNamespace(),
        m.getLeaseUid(),
        m.hasAcquireTime() ? Optional.of(instant(m.getAcquireTime())) : Optional.empty(),
        m.hasRenewTime() ? Optional.of(instant(m.getRenewTime())) : Optional.empty(),
        validFor,
        validUntil,
        duration(m.getLeaseDuration()),
        m.getObserved(),
        m.getSteppingDown());
  }

  /**
   * The fencing revision of {@code m}: fencing_revision_decimal where the sidecar sent it (every
   * size, up to 2<sup>128</sup>-1), else the int64 fencing_revision of a sidecar older than that
   * field (0.2.0 and earlier).
   *
   * @throws BatonException if fencing_revision_decimal is sent but not a revision
   */
  private static BigInteger fencingRevision(LeaderElectionOuterClass.Leadership m) {
    String decimal = m.getFencingRevisionDecimal();
    if (decimal.isEmpty()) {
      return BigInteger.valueOf(m.getFencingRevision());
    }
    BigInteger revision = Revisions.parse(decimal);
    if (revision == null) {
      throw new BatonException("baton: not a Leadership answer: fencing_revision_decimal \""
          + decimal + "\" is not a revision");
    }
    return revision;
  }

  /**
   * Whether {@code other} says the same as this state, but for the times that move with every
   * renew or answer: what a watch compares to tell news.
   */
  boolean sameState(Leadership other) {
    return isLeader == other.isLeader
        && observed == other.observed
        && steppingDown == other.steppingDown
        && fencingToken == other.fencingToken
        && identity.equals(other.identity)
        && holderIdentity.equals(other.holderIdentity)
        && leaseUid.equals(other.leaseUid);
  }

  /** Whether {@code other} is a state of the same term of the same sidecar. */
  boolean sameTerm(Leadership other) {
    return identity.equals(other.identity) && fencingToken == other.fencingToken;
  }

  /** This state after its guarantee ran out without news from the sidecar. */
  Leadership expired() {
    return new Leadership(false, identity, holderIdentity, fencingToken, fencingRevision,
        leaseName, leaseNamespace, leaseUid, acquireTime, renewTime, Duration.ZERO, Duration.ZERO,
        leaseDuration, observed, steppingDown);
  }

  private static Duration duration(com.google.protobuf.Duration d) {
    return Duration.ofSeconds(d.getSeconds(), d.getNanos());
  }

  private static Instant instant(com.google.protobuf.Timestamp t) {
    return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
  }
}

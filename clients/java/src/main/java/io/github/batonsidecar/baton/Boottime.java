package io.github.batonsidecar.baton;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The node's {@code CLOCK_BOOTTIME} as the JVM can read it: time since boot, counting time spent
 * suspended. The sidecar's deadlines ({@link Leadership#validUntilBoottime()}) are readings of this
 * clock; the sidecar and the application share the node's kernel, so such a deadline means the
 * same instant in every container of the Pod.
 *
 * <p>The JVM has no call for {@code clock_gettime(CLOCK_BOOTTIME)}: {@link System#nanoTime()} is
 * {@code CLOCK_MONOTONIC}, which stops while the machine is suspended, so a deadline compared with
 * it would look further away after a resume than it is. This class reads {@code /proc/uptime}
 * instead, whose first field is {@code CLOCK_BOOTTIME} (in the reader's time namespace, as {@code
 * clock_gettime} is) truncated to hundredths of a second. Each reading is therefore an interval of
 * 10 ms: {@link #floor()} is at or before the true time, {@link #ceiling()} after it. The client
 * counts validity with the ceiling (a remaining validity is at most 10 ms short, never long) and
 * records when a request was sent with the floor, so neither rounding can over-promise. A reading
 * costs a seek and a read of a file kept open (a few microseconds; see the README for the
 * numbers). It is a {@link RandomAccessFile}, not a {@code FileChannel}: an interrupt during a
 * channel's read would close it for every thread.
 *
 * <p>Where {@code /proc/uptime} cannot be read (not Linux), the clock is the monotonic time since
 * this class was loaded, and {@link #sharesSidecarClock()} is false: the sidecar's deadlines are on
 * another clock then, so the client counts each answer's {@code validFor} from when its request
 * was sent instead.
 *
 * <p>Thread-safe.
 */
public final class Boottime {
  /** The resolution of {@code /proc/uptime}: it prints hundredths of a second. */
  static final long RESOLUTION_NANOS = 10_000_000L;

  private static final String UPTIME = "/proc/uptime";
  private static final RandomAccessFile uptime = open(); // reads synchronized on it
  private static final long processStart = System.nanoTime();

  private Boottime() {}

  /**
   * A reading no later than the true {@code CLOCK_BOOTTIME} now: what to take as "when the request
   * was sent".
   */
  public static Duration floor() {
    return Duration.ofNanos(floorNanos());
  }

  /**
   * A reading no earlier than the true {@code CLOCK_BOOTTIME} now: what to compare a deadline with,
   * so that time left is never over-estimated.
   */
  public static Duration ceiling() {
    return Duration.ofNanos(floorNanos() + (uptime != null ? RESOLUTION_NANOS : 0));
  }

  /**
   * Whether {@link #floor()} and {@link #ceiling()} read the node's {@code CLOCK_BOOTTIME} (so the
   * sidecar's deadlines can be compared with them).
   */
  public static boolean sharesSidecarClock() {
    return uptime != null;
  }

  static long floorNanos() {
    if (uptime == null) {
      return System.nanoTime() - processStart;
    }
    try {
      return parseUptime(read(uptime));
    } catch (IOException e) {
      // It was readable when the class loaded; a procfs file that stops being readable is a
      // broken invariant, not a condition to handle.
      throw new IllegalStateException("baton: reading " + UPTIME + ": " + e, e);
    }
  }

  /** The file's text afresh: a read from offset 0 makes the kernel print it again. */
  private static String read(RandomAccessFile file) throws IOException {
    byte[] buf = new byte[64];
    int n;
    synchronized (file) {
      file.seek(0);
      n = file.read(buf);
    }
    return new String(buf, 0, Math.max(n, 0), StandardCharsets.US_ASCII);
  }

  /** The first field of {@code /proc/uptime} ("12345.67 ...") in nanoseconds. */
  static long parseUptime(String text) {
    int dot = text.indexOf('.');
    int end = text.indexOf(' ');
    if (dot <= 0 || end != dot + 3) {
      throw new IllegalStateException("baton: unexpected " + UPTIME + ": " + text);
    }
    long seconds = Long.parseLong(text.substring(0, dot));
    long hundredths = Long.parseLong(text.substring(dot + 1, end));
    return seconds * 1_000_000_000L + hundredths * RESOLUTION_NANOS;
  }

  private static RandomAccessFile open() {
    try {
      RandomAccessFile file = new RandomAccessFile(UPTIME, "r");
      parseUptime(read(file));
      return file;
    } catch (IOException | RuntimeException e) {
      return null; // not Linux: see the class comment
    }
  }
}

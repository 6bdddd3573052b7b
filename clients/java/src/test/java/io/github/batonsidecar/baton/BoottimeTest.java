package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class BoottimeTest {
  @Test
  void parsesTheFirstFieldOfProcUptime() {
    assertEquals(12345_670_000_000L, Boottime.parseUptime("12345.67 54321.00\n"));
    assertEquals(0L, Boottime.parseUptime("0.00 0.00\n"));
    assertThrows(IllegalStateException.class, () -> Boottime.parseUptime("12345 1\n"));
  }

  /**
   * The clock brackets the real CLOCK_BOOTTIME: a reading by clock_gettime in another process,
   * taken between our floor and our ceiling, lies between them.
   */
  @Test
  void floorAndCeilingBracketClockGettime() throws IOException, InterruptedException {
    assumeTrue(Boottime.sharesSidecarClock(), "no /proc/uptime");
    for (int i = 0; i < 5; i++) {
      Duration floor = Boottime.floor();
      Process p = new ProcessBuilder("python3", "-c",
          "import time; print(time.clock_gettime_ns(time.CLOCK_BOOTTIME))").start();
      assumeTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "no python3");
      Duration ceiling = Boottime.ceiling();
      long real = Long.parseLong(new String(p.getInputStream().readAllBytes(),
          StandardCharsets.US_ASCII).trim());
      assertTrue(floor.toNanos() <= real && real <= ceiling.toNanos(),
          floor + " <= " + Duration.ofNanos(real) + " <= " + ceiling);
    }
  }

  @Test
  void floorNeverGoesBackAndCeilingIsAhead() {
    Duration last = Duration.ZERO;
    for (int i = 0; i < 1000; i++) {
      Duration f = Boottime.floor();
      assertTrue(f.compareTo(last) >= 0);
      last = f;
    }
    if (Boottime.sharesSidecarClock()) {
      assertTrue(Boottime.ceiling().compareTo(Boottime.floor()) > 0);
    }
  }
}

package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** The client against the fixture's real sidecars, beyond the conformance scenarios. */
class IntegrationTest {
  @Test
  void exactlyOneSidecarLeadsAndItsGuaranteeIsOnTheSharedClock() {
    Sidecars sidecars = Sidecars.require();
    int leaders = 0;
    for (Sidecars.Sidecar s : sidecars.list()) {
      try (BatonClient c = sidecars.client(s.index())) {
        Leadership l = c.leadership();
        assertEquals(s.identity(), l.identity());
        assertTrue(l.observed());
        if (l.isLeader()) {
          leaders++;
          Duration now = Boottime.floor();
          assertTrue(l.validUntilBoottime().compareTo(now) > 0, l + " at " + now);
          assertTrue(l.validUntilBoottime().compareTo(now.plus(sidecars.renewDeadline)) <= 0,
              "a promise beyond the renew deadline: " + l + " at " + now);
          assertTrue(c.requireLeader(Duration.ofMillis(100)) >= 0);
        } else {
          assertThrows(NotLeaderException.class, () -> c.requireLeader(Duration.ZERO));
        }
      }
    }
    assertEquals(1, leaders);
  }

  @Test
  void httpClientAnswersAsTheGrpcClient() {
    Sidecars sidecars = Sidecars.require();
    int leader = sidecars.leader();
    assertNotEquals(-1, leader);
    Sidecars.Sidecar s = sidecars.get(leader);
    BatonHttpClient http = BatonHttpClient.builder().address(s.http())
        .expectLease(sidecars.namespace, sidecars.leaseName).build();
    Leadership l = http.leadership();
    assertTrue(l.isLeader(), l.toString());
    assertEquals(s.identity(), l.identity());
    int token = http.requireLeader(Duration.ofMillis(100));
    assertEquals(l.fencingToken(), token);
    assertTrue(http.acknowledgeStepDown(token), "the answers above were promises to this client");
    assertFalse(http.acknowledgeStepDown(token), "and are given back now");
    BatonHttpClient wrong = BatonHttpClient.builder().address(s.http())
        .expectLease(sidecars.namespace, "not-this-lease").build();
    assertThrows(WrongLeaseException.class, wrong::isLeader);
  }

  @Test
  void resignHandsOverAndWaitUntilLeaderSeesTheNewLeader() throws Exception {
    Sidecars sidecars = Sidecars.require();
    int leader = sidecars.leader();
    assertNotEquals(-1, leader);
    int follower = (leader + 1) % sidecars.list().size();
    try (BatonClient old = sidecars.client(leader); BatonClient other = sidecars.client(follower)) {
      int token = old.leadership().fencingToken();
      assertThrows(TimeoutException.class, () -> other.waitUntilLeader(Duration.ofMillis(300)));
      assertTrue(old.resign());
      assertFalse(old.isLeader());
      Leadership next = null;
      for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
          next == null && System.nanoTime() < end; ) {
        for (Sidecars.Sidecar s : sidecars.list()) {
          try (BatonClient c = sidecars.client(s.index())) {
            if (s.index() != leader && c.isLeader()) {
              next = c.waitUntilLeader(Duration.ofSeconds(1));
            }
          } catch (SidecarUnavailableException | TimeoutException e) {
            // ask again
          }
        }
      }
      assertTrue(next != null && next.fencingToken() > token,
          "after resigning token " + token + ": " + next);
    }
  }
}

package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import baton.v1.LeaderElectionOuterClass;
import baton.v1.LeaderElectionOuterClass.WatchLeadershipResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.math.BigInteger;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The client's own watch logic, against a scripted in-process sidecar. */
class WatchTest {
  @Test
  void leaderTurnsFollowerWhenItsGuaranteeRunsOutWithoutNews() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      Recorder r = new Recorder();
      try (Watch w = c.watch(r)) {
        StreamObserver<WatchLeadershipResponse> s = fake.nextStream();
        s.onNext(FakeSidecar.event(FakeSidecar.leader(3, Duration.ofMillis(300))));
        Recorder.Event led = r.await(Recorder.Event::leads, Duration.ofSeconds(2), "leader");
        Recorder.Event lapsed = r.await(e -> e.state() != null, Duration.ofSeconds(2),
            "the lapsed state");
        assertFalse(lapsed.state().isLeader());
        assertEquals(3, lapsed.state().fencingToken());
        // On time: no later than a clock recheck after the deadline, and no earlier than the
        // clock's resolution before it (the watch compares the deadline with Boottime.ceiling()).
        Duration deadline = led.state().validUntilBoottime();
        Duration resolution = Duration.ofNanos(Boottime.RESOLUTION_NANOS);
        assertTrue(lapsed.at().plus(resolution).compareTo(deadline) >= 0,
            "turned follower at " + lapsed.at() + ", well before " + deadline);
        assertTrue(lapsed.at().compareTo(deadline.plus(WatchLoop.CLOCK_RECHECK)) <= 0,
            "turned follower at " + lapsed.at() + ", long after " + deadline);
      }
    }
  }

  @Test
  void silentStreamIsReconnected() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      Recorder r = new Recorder();
      try (Watch w = c.watch(r)) {
        fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))));
        r.await(Recorder.Event::leads, Duration.ofSeconds(2), "leader");
        // Nothing more: after 2 x 100ms + 1s the watch gives up on the stream.
        Recorder.Event stalled = r.await(e -> e.error() != null, Duration.ofSeconds(3), "stall");
        assertTrue(stalled.error() instanceof SidecarUnavailableException, stalled.toString());
        fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))));
        r.await(Recorder.Event::leads, Duration.ofSeconds(2), "leader after reconnecting");
      }
    }
  }

  @Test
  void repeatedStateIsNotNewsButEveryChangeIs() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      Recorder r = new Recorder();
      try (Watch w = c.watch(r)) {
        StreamObserver<WatchLeadershipResponse> s = fake.nextStream();
        s.onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))));
        s.onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9)))); // a heartbeat
        s.onNext(FakeSidecar.event(FakeSidecar.leader(2, Duration.ofSeconds(9))));
        r.await(e -> e.leads() && e.state().fencingToken() == 2, Duration.ofSeconds(2), "token 2");
        assertEquals(2, r.all().size(), r.all().toString());
      }
    }
  }

  @Test
  void brokenStreamIsReportedAndReopened() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      Recorder r = new Recorder();
      try (Watch w = c.watch(r)) {
        fake.nextStream().onError(Status.UNAVAILABLE.asRuntimeException());
        Recorder.Event e = r.await(ev -> ev.error() != null, Duration.ofSeconds(2), "error");
        assertTrue(e.error() instanceof SidecarUnavailableException, e.toString());
        fake.nextStream().onCompleted(); // a sidecar shutting down ends the stream
        e = r.await(ev -> ev.error() != null, Duration.ofSeconds(2), "error");
        assertTrue(e.error() instanceof SidecarUnavailableException, e.toString());
        fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))));
        r.await(Recorder.Event::leads, Duration.ofSeconds(2), "leader");
      }
    }
  }

  @Test
  void malformedRevisionIsReportedAndTheStreamReopened() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      Recorder r = new Recorder();
      try (Watch w = c.watch(r)) {
        fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))
            .toBuilder().setFencingRevisionDecimal("-4711").build()));
        Recorder.Event e = r.await(ev -> ev.error() != null, Duration.ofSeconds(2), "error");
        assertFalse(e.error() instanceof SidecarUnavailableException, e.toString());
        assertTrue(r.all().stream().noneMatch(ev -> ev.state() != null));
        fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))
            .toBuilder().setFencingRevisionDecimal("18446744073709551616").build()));
        Recorder.Event led = r.await(Recorder.Event::leads, Duration.ofSeconds(2), "leader");
        assertEquals(new BigInteger("18446744073709551616"), led.state().fencingRevision());
      }
    }
  }

  @Test
  void answersOfAnotherLeaseAreRefused() throws Exception {
    try (FakeSidecar fake = new FakeSidecar();
        BatonClient c = fake.client().expectLease("ns", "other").build()) {
      fake.answer = FakeSidecar.leader(1, Duration.ofSeconds(9));
      WrongLeaseException e = org.junit.jupiter.api.Assertions.assertThrows(
          WrongLeaseException.class, c::leadership);
      assertEquals("ns/other", e.expectedLease());
      assertEquals("ns/lease", e.servedLease());
      Recorder r = new Recorder();
      try (Watch w = c.watch(r)) {
        fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(1, Duration.ofSeconds(9))));
        r.await(ev -> ev.error() instanceof WrongLeaseException, Duration.ofSeconds(2),
            "wrong Lease");
        assertTrue(r.all().stream().noneMatch(ev -> ev.state() != null));
      }
    }
    try (FakeSidecar fake = new FakeSidecar();
        BatonClient c = fake.client().expectLease(null, "lease").build()) {
      fake.answer = FakeSidecar.leader(1, Duration.ofSeconds(9));
      assertTrue(c.isLeader());
    }
  }

  @Test
  void closeFromTheListenerStopsTheWatch() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      LeaderElectionOuterClass.Leadership l = FakeSidecar.leader(1, Duration.ofSeconds(9));
      assertEquals(l.getFencingToken(), c.waitUntilLeaderAsync()
          .thenApply(Leadership::fencingToken).completeOnTimeout(-1, 5, java.util.concurrent.TimeUnit.SECONDS)
          .thenCombine(java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
              fake.nextStream().onNext(FakeSidecar.event(l));
            } catch (InterruptedException e) {
              throw new IllegalStateException(e);
            }
          }), (token, unused) -> token).get());
    }
  }
}

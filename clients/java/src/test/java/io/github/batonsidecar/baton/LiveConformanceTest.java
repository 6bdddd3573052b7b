package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The live scenarios of clients/conformance/README.md, against the real sidecars of
 * clients/testing/sidecars (lease 3 s, renew deadline 1.5 s, retry 250 ms). Each reports its
 * scenario after its last assertion. Skipped without $BATON_SIDECARS, except absent-sidecar,
 * which needs none.
 */
class LiveConformanceTest {
  @Test
  void absentSidecar() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    try (BatonClient c = BatonClient.builder().address("127.0.0.1:" + port).build()) {
      long t0 = System.nanoTime();
      assertThrows(SidecarUnavailableException.class, c::leadership);
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      assertTrue(took.compareTo(Duration.ofSeconds(2)) < 0, "took " + took);
      assertThrows(SidecarUnavailableException.class, c::isLeader);
      ExecutionException async = assertThrows(ExecutionException.class,
          () -> c.isLeaderAsync().get(5, TimeUnit.SECONDS));
      assertTrue(async.getCause() instanceof SidecarUnavailableException, async.toString());
      assertThrows(SidecarUnavailableException.class,
          () -> c.requireLeader(Duration.ZERO));
    }
    Conformance.passed("absent-sidecar");
  }

  @Test
  void restartingSidecar() throws InterruptedException {
    Sidecars sidecars = Sidecars.require();
    Recorder r = new Recorder();
    try (BatonClient c = sidecars.client(0); Watch w = c.watch(r)) {
      String before = r.await(e -> e.state() != null, Duration.ofSeconds(5), "first state")
          .state().identity();
      sidecars.signal(0, "KILL");
      r.await(e -> e.error() instanceof SidecarUnavailableException
          || (e.state() != null && !e.state().isLeader()), Duration.ofSeconds(15), "outage");
      Recorder.Event back = r.await(e -> e.state() != null && !e.state().identity().equals(before),
          Duration.ofSeconds(15), "the restarted sidecar");
      assertEquals(sidecars.get(0).identity(), back.state().identity());
    }
    Conformance.passed("restarting-sidecar");
  }

  @Test
  void watchThroughHandover() throws InterruptedException {
    Sidecars sidecars = Sidecars.require();
    int n = sidecars.list().size();
    List<BatonClient> clients = new ArrayList<>();
    List<Watch> watches = new ArrayList<>();
    List<Recorder> recorders = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        clients.add(sidecars.client(i));
        recorders.add(new Recorder());
        watches.add(clients.get(i).watch(recorders.get(i)));
      }
      int leader = -1;
      Leadership old = null;
      for (int i = 0; i < n; i++) {
        Recorder.Event first = recorders.get(i).await(e -> e.state() != null,
            Duration.ofSeconds(5), "first state of sidecar " + i);
        if (first.leads()) {
          leader = i;
          old = first.state();
        }
      }
      assertNotEquals(-1, leader, "no sidecar leads");
      sidecars.signal(leader, "TERM");
      recorders.get(leader).await(e -> e.state() != null
          && (e.state().steppingDown() || !e.state().isLeader()), Duration.ofSeconds(10),
          "stepping down or not leader from the old leader");
      Recorder.Event next = null;
      int newLeader = -1;
      for (long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
          next == null && System.nanoTime() < end; ) {
        for (int i = 0; i < n && next == null; i++) {
          if (i == leader) {
            continue;
          }
          for (Recorder.Event e : recorders.get(i).all()) {
            if (e.leads() && e.state().fencingToken() > old.fencingToken()) {
              next = e;
              newLeader = i;
              break;
            }
          }
        }
        Thread.sleep(50);
      }
      if (next == null) {
        fail("no other sidecar led with a token above " + old.fencingToken());
      }
      Duration lastPromise = Duration.ZERO;
      for (Recorder.Event e : recorders.get(leader).all()) {
        if (e.leads() && e.state().identity().equals(old.identity())) {
          lastPromise = e.state().validUntilBoottime();
        }
      }
      assertTrue(next.at().compareTo(lastPromise) >= 0, "sidecar " + newLeader
          + " led at " + next.at() + ", before the old leader's last promise ended at "
          + lastPromise);
    } finally {
      watches.forEach(Watch::close);
      clients.forEach(BatonClient::close);
    }
    Conformance.passed("watch-through-handover");
  }

  @Test
  void requireLeaderAfterPause() throws InterruptedException {
    Sidecars sidecars = Sidecars.require();
    int leader = sidecars.leader();
    assertNotEquals(-1, leader, "no sidecar leads");
    try (BatonClient c = sidecars.client(leader)) {
      Leadership l = c.leadership();
      assertTrue(l.isLeader());
      sidecars.signal(leader, "STOP");
      try {
        Thread.sleep(sidecars.leaseDuration.plusMillis(1500).toMillis());
        assertEquals(Duration.ZERO, l.remaining());
        assertThrows(SidecarUnavailableException.class, () -> c.requireLeader(Duration.ZERO));
      } finally {
        sidecars.signal(leader, "CONT");
      }
      Leadership after = null;
      for (long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
          after == null && System.nanoTime() < end; ) {
        try {
          after = c.leadership();
        } catch (SidecarUnavailableException e) {
          Thread.sleep(50);
        }
      }
      if (after == null) {
        fail("the paused sidecar did not answer after SIGCONT");
      }
      assertTrue(!after.isLeader() || after.fencingToken() > l.fencingToken(),
          "the paused sidecar answered " + after);
      boolean higher = false;
      for (long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
          !higher && System.nanoTime() < end; ) {
        for (Sidecars.Sidecar s : sidecars.list()) {
          try (BatonClient any = sidecars.client(s.index())) {
            Leadership x = any.leadership();
            higher |= x.isLeader() && x.fencingToken() > l.fencingToken();
          } catch (SidecarUnavailableException e) {
            // restarting or paused: ask the next one
          }
        }
        Thread.sleep(50);
      }
      assertTrue(higher, "no sidecar led with a token above " + l.fencingToken() + " within 5s");
    }
    Conformance.passed("require-leader-after-pause");
  }

  @Test
  void stepDownAck() throws Exception {
    Sidecars sidecars = Sidecars.require();
    sidecars.awaitAnonymousPromisesLapsed();
    int n = sidecars.list().size();
    List<BatonClient> clients = new ArrayList<>();
    List<Watch> watches = new ArrayList<>();
    List<Recorder> recorders = new ArrayList<>();
    ExecutorService loops = Executors.newCachedThreadPool();
    List<Future<?>> running = new ArrayList<>();
    CompletableFuture<Integer> started = new CompletableFuture<>();
    CompletableFuture<Integer> workReturned = new CompletableFuture<>();
    try {
      for (int i = 0; i < n; i++) {
        BatonClient c = sidecars.client(i);
        clients.add(c);
        int index = i;
        running.add(loops.submit(() -> {
          c.runWhileLeader(term -> {
            started.complete(index);
            try {
              Thread.sleep(Long.MAX_VALUE);
            } finally {
              workReturned.complete(index);
            }
          });
          return null;
        }));
        // The test's eyes on every sidecar: a watch tells a new leader at once. It shares the
        // loop's client, so the loop's acknowledgement gives back its promises too.
        recorders.add(new Recorder());
        watches.add(c.watch(recorders.get(i)));
      }
      int leader = started.get(15, TimeUnit.SECONDS);
      Leadership a = clients.get(leader).leadership();
      assertTrue(a.isLeader(), "the leader's fresh answer: " + a);
      sidecars.signal(leader, "TERM");
      assertEquals(leader, workReturned.get(5, TimeUnit.SECONDS));
      Duration resolution = Duration.ofNanos(Boottime.RESOLUTION_NANOS);
      Duration firstLed = null;
      for (long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
          firstLed == null && System.nanoTime() < end; ) {
        for (int i = 0; i < n; i++) {
          if (i == leader) {
            continue;
          }
          for (Recorder.Event e : recorders.get(i).all()) {
            if (e.leads() && e.state().fencingToken() > a.fencingToken()) {
              // The answer was produced before it was delivered: before this ceiling.
              Duration seen = e.at().plus(resolution);
              firstLed = firstLed == null || seen.compareTo(firstLed) < 0 ? seen : firstLed;
            }
          }
        }
        Thread.sleep(20);
      }
      assertTrue(firstLed != null && firstLed.compareTo(a.validUntilBoottime()) < 0,
          "no other sidecar led before the acknowledged promise's end "
          + a.validUntilBoottime() + " (first seen leading at " + firstLed + ")");
    } finally {
      watches.forEach(Watch::close);
      running.forEach(f -> f.cancel(true));
      loops.shutdown();
      assertTrue(loops.awaitTermination(10, TimeUnit.SECONDS), "runWhileLeader did not return");
      clients.forEach(BatonClient::close);
    }
    Conformance.passed("step-down-ack");
  }

  @Test
  void leaseIdentity() throws InterruptedException {
    Sidecars sidecars = Sidecars.require();
    String address = sidecars.get(0).grpc();
    try (BatonClient wrong = BatonClient.builder().address(address)
        .expectLease(sidecars.namespace, "not-this-lease").build()) {
      WrongLeaseException e = assertThrows(WrongLeaseException.class, wrong::leadership);
      String served = sidecars.namespace + "/" + sidecars.leaseName;
      String expected = sidecars.namespace + "/not-this-lease";
      assertTrue(e.getMessage().contains(served) && e.getMessage().contains(expected),
          e.getMessage());
      assertEquals(served, e.servedLease());
      assertEquals(expected, e.expectedLease());
      assertThrows(WrongLeaseException.class, wrong::isLeader);
      assertThrows(WrongLeaseException.class, () -> wrong.requireLeader(Duration.ZERO));
      Recorder r = new Recorder();
      try (Watch w = wrong.watch(r)) {
        r.await(ev -> ev.error() instanceof WrongLeaseException, Duration.ofSeconds(5),
            "a wrong-Lease error from the watch");
        assertFalse(r.all().stream().anyMatch(ev -> ev.state() != null));
      }
    }
    boolean someoneLeads = false;
    for (Sidecars.Sidecar s : sidecars.list()) {
      try (BatonClient right = sidecars.client(s.index())) {
        Leadership l = right.leadership();
        assertEquals(sidecars.leaseName, l.leaseName());
        assertEquals(sidecars.namespace, l.leaseNamespace());
        someoneLeads |= l.isLeader();
      }
    }
    assertTrue(someoneLeads, "no sidecar leads");
    Conformance.passed("lease-identity");
  }
}

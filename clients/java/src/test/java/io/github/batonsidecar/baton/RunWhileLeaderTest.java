package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import baton.v1.LeaderElectionOuterClass.WatchLeadershipResponse;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** runWhileLeader's order of things: work, interrupt, return, then acknowledge. */
class RunWhileLeaderTest {
  private static void awaitTrue(java.util.function.BooleanSupplier p, String what)
      throws InterruptedException {
    for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5); !p.getAsBoolean(); ) {
      if (System.nanoTime() > end) {
        throw new AssertionError("not " + what + " within 5s");
      }
      Thread.sleep(10);
    }
  }

  @Test
  void steppingDownInterruptsTheWorkAndAcknowledgesOnceItReturned() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeSidecar fake = new FakeSidecar();
        BatonClient c = fake.client().clientId("app-1").build()) {
      List<String> log = fake.calls; // the work's steps interleave with the sidecar's calls
      Future<?> loop = pool.submit(() -> {
        c.runWhileLeader(term -> {
          log.add("work " + term.fencingToken());
          try {
            Thread.sleep(Long.MAX_VALUE);
          } finally {
            Thread.sleep(100); // cleaning up takes a while; the acknowledgement must wait
            log.add("work returned");
          }
        });
        return null;
      });
      StreamObserver<WatchLeadershipResponse> s = fake.nextStream();
      s.onNext(FakeSidecar.event(FakeSidecar.leader(5, Duration.ofSeconds(9))));
      awaitTrue(() -> log.contains("work 5"), "working");
      s.onNext(FakeSidecar.event(FakeSidecar.leader(5, Duration.ofSeconds(9)).toBuilder()
          .setIsLeader(false).setSteppingDown(true).build()));
      awaitTrue(() -> log.contains("ack app-1 5"), "acknowledged");
      assertEquals(List.of("watch app-1", "work 5", "work returned", "ack app-1 5"), log);
      loop.cancel(true);
    } finally {
      pool.shutdown();
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
    }
  }

  @Test
  void interruptingTheLoopEndsTheWorkAndAcknowledges() throws Exception {
    List<String> log = new CopyOnWriteArrayList<>();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeSidecar fake = new FakeSidecar();
        BatonClient c = fake.client().clientId("app-2").build()) {
      Future<?> loop = pool.submit(() -> {
        c.runWhileLeader(term -> {
          log.add("work");
          try {
            Thread.sleep(Long.MAX_VALUE);
          } finally {
            log.add("work returned");
          }
        });
        return null;
      });
      fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(8, Duration.ofSeconds(9))));
      awaitTrue(() -> log.contains("work"), "working");
      loop.cancel(true);
      awaitTrue(() -> fake.calls.contains("ack app-2 8"), "acknowledged");
      assertTrue(log.contains("work returned"));
    } finally {
      pool.shutdown();
      assertTrue(pool.awaitTermination(5, TimeUnit.SECONDS));
    }
  }

  @Test
  void closingTheClientEndsTheWorkAndTheLoop() throws Exception {
    List<String> log = new CopyOnWriteArrayList<>();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeSidecar fake = new FakeSidecar()) {
      BatonClient c = fake.client().build();
      Future<?> loop = pool.submit(() -> {
        c.runWhileLeader(term -> {
          log.add("work");
          try {
            Thread.sleep(Long.MAX_VALUE);
          } finally {
            log.add("work returned");
          }
        });
        return null;
      });
      fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(4, Duration.ofSeconds(9))));
      awaitTrue(() -> log.contains("work"), "working");
      c.close();
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> loop.get(5, TimeUnit.SECONDS));
      assertTrue(e.getCause() instanceof BatonException, e.toString());
      assertEquals(List.of("work", "work returned"), log);
      assertThrows(IllegalStateException.class, () -> c.watch(state -> { }));
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void workThatThrowsDuringItsTermEndsTheLoop() throws Exception {
    try (FakeSidecar fake = new FakeSidecar();
        BatonClient c = fake.client().clientId("app-3").build()) {
      Thread feeder = new Thread(() -> {
        try {
          fake.nextStream().onNext(FakeSidecar.event(FakeSidecar.leader(2, Duration.ofSeconds(9))));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      feeder.start();
      ExecutionException e = assertThrows(ExecutionException.class, () -> c.runWhileLeader(term -> {
        throw new IllegalStateException("the store is gone");
      }));
      assertEquals("the store is gone", e.getCause().getMessage());
      assertTrue(fake.calls.contains("ack app-3 2"), fake.calls.toString());
      feeder.join();
    }
  }
}

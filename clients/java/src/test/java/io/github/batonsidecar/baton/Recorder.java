package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A watch listener that keeps what it was told, with when, for tests to wait on. */
final class Recorder implements LeadershipListener {
  /**
   * One call: a state or an error, and the {@link Boottime#floor()} reading when it was
   * delivered (no later than the true time, so "arrived no earlier than" holds for real).
   */
  record Event(Leadership state, BatonException error, Duration at) {
    boolean leads() {
      return state != null && state.isLeader();
    }

    @Override
    public String toString() {
      return at.toMillis() + "ms " + (state != null ? state : error);
    }
  }

  private final LinkedBlockingQueue<Event> queue = new LinkedBlockingQueue<>();
  private final List<Event> seen = new ArrayList<>(); // taken from the queue, in order

  @Override
  public void onLeadership(Leadership state) {
    queue.add(new Event(state, null, Boottime.floor()));
  }

  @Override
  public void onError(BatonException error) {
    queue.add(new Event(null, error, Boottime.floor()));
  }

  /** The next event matching {@code p} within {@code timeout}; fails the test otherwise. */
  Event await(Predicate<Event> p, Duration timeout, String what) throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    while (true) {
      Event e = queue.poll(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
      if (e == null) {
        return fail("no " + what + " within " + timeout.toMillis() + "ms; seen: " + seen);
      }
      seen.add(e);
      if (p.test(e)) {
        return e;
      }
    }
  }

  /** Every event taken so far, and every one waiting. */
  List<Event> all() {
    queue.drainTo(seen);
    return List.copyOf(seen);
  }
}

package io.github.batonsidecar.baton;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link BatonClient#runWhileLeader}: the watch's states and the work's returns arrive on one
 * queue, and the calling thread decides, one event at a time, when a term's work starts, when it
 * is interrupted, and when the term is acknowledged.
 */
final class LeaderLoop {
  private static final AtomicInteger workers = new AtomicInteger();

  /** What the loop reacts to: a watched state (null: an error) or a work that returned. */
  private sealed interface Event permits State, Returned {}

  private record State(Leadership leadership) implements Event {}

  private record Returned(Running running, Throwable error) implements Event {}

  private final BatonClient client;
  private final LeaderWork work;
  private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();

  LeaderLoop(BatonClient client, LeaderWork work) {
    this.client = client;
    this.work = work;
  }

  /** One term's work on its thread. */
  private final class Running {
    final Leadership term;
    final Thread thread;

    Running(Leadership term) {
      this.term = term;
      this.thread = new Thread(this::run, "baton-leader-work-" + workers.incrementAndGet());
      thread.setDaemon(true);
      thread.start();
    }

    private void run() {
      Throwable error = null;
      try {
        work.run(term);
      } catch (Throwable t) { // handed to the loop's thread
        error = t;
      }
      events.add(new Returned(this, error));
    }
  }

  /** Whether a watched state lets leader work run. */
  private static boolean leading(Leadership l) {
    return l != null && l.isLeader() && !l.steppingDown() && !l.remaining().isZero();
  }

  void run() throws InterruptedException, ExecutionException {
    Running running = null;
    Leadership finished = null; // a term whose work returned by itself
    Watch watch = client.watch(new LeadershipListener() {
      @Override
      public void onLeadership(Leadership state) {
        events.add(new State(state));
      }

      @Override
      public void onError(BatonException error) {
        events.add(new State(null));
      }
    });
    try {
      while (true) {
        Event event = events.take();
        if (event instanceof Returned r) {
          if (r.running() != running) {
            continue; // an ended term's work, already acknowledged
          }
          running = null;
          acknowledge(r.running().term);
          if (r.error() != null) {
            throw new ExecutionException("baton: leader work failed", r.error());
          }
          finished = r.running().term;
          continue;
        }
        if (client.isClosed()) {
          throw new BatonException("baton: the client was closed");
        }
        Leadership state = ((State) event).leadership();
        boolean leading = leading(state);
        if (running != null && (!leading || !state.sameTerm(running.term))) {
          end(running);
          running = null;
        }
        if (!leading) {
          if (state != null && finished != null && state.sameTerm(finished)) {
            // Answers after the work returned were promises too; nothing acts on them.
            acknowledge(finished);
          }
          finished = null;
        } else if (running == null && (finished == null || !state.sameTerm(finished))) {
          running = new Running(state);
          finished = null;
        }
      }
    } finally {
      watch.close();
      if (running != null) {
        end(running);
      }
    }
  }

  /**
   * Interrupts the work, waits for it to return and acknowledges its term. It does so even when
   * the calling thread was interrupted (which is when a fast handover matters most), and keeps
   * that interrupt for the caller.
   */
  private void end(Running r) {
    boolean interrupted = Thread.interrupted();
    r.thread.interrupt();
    while (true) {
      try {
        r.thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    acknowledge(r.term);
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private void acknowledge(Leadership term) {
    boolean interrupted = Thread.interrupted();
    try {
      client.acknowledgeStepDown(term.fencingToken());
    } catch (BatonException e) {
      // Without the acknowledgement the handover is only slower: the sidecar waits for the
      // promises to lapse.
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}

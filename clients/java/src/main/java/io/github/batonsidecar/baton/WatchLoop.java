package io.github.batonsidecar.baton;

import baton.v1.LeaderElectionGrpc;
import baton.v1.LeaderElectionOuterClass.WatchLeadershipRequest;
import baton.v1.LeaderElectionOuterClass.WatchLeadershipResponse;
import io.grpc.ClientCall;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One {@link BatonClient#watch}: a WatchLeadership stream, re-opened with backoff whenever it
 * fails, ends or goes silent, plus the clock that turns a leader into a follower when its
 * guarantee runs out without news.
 *
 * <p>Everything but {@link #close()} runs on the watch's own thread (its executor), one event at a
 * time: stream messages and failures are handed to it, and so are its timers. So the fields below
 * need no lock, and the listener is called in order, never concurrently.
 */
final class WatchLoop implements Watch {
  /**
   * How long the watch sleeps on the JVM's timers (which run on {@code CLOCK_MONOTONIC} and stop
   * during a suspend) before it compares a guarantee with {@code CLOCK_BOOTTIME} again.
   */
  static final Duration CLOCK_RECHECK = Duration.ofMillis(100);

  private static final Logger logger = Logger.getLogger(WatchLoop.class.getName());
  private static final AtomicInteger watches = new AtomicInteger();

  private final BatonClient client;
  private final LeadershipListener listener;
  private final Consumer<WatchLoop> onClose;
  private final ScheduledThreadPoolExecutor executor;
  private volatile Thread thread; // the executor's one thread
  private final Duration stallTimeout;
  private final AtomicBoolean closeOnce = new AtomicBoolean();
  private volatile boolean closed;

  // Only touched on the executor's thread.
  private int generation; // of the current stream; events of older ones are dropped
  private ClientCall<WatchLeadershipRequest, WatchLeadershipResponse> call;
  private boolean connected; // a message arrived on the current stream
  private Leadership last; // the last state delivered on the current stream
  private Duration delay; // before the next reconnection attempt
  private ScheduledFuture<?> stallTimer;
  private ScheduledFuture<?> expiryTimer;

  private WatchLoop(BatonClient client, LeadershipListener listener, Consumer<WatchLoop> onClose) {
    this.client = client;
    this.listener = listener;
    this.onClose = onClose;
    this.stallTimeout = client.heartbeatInterval().multipliedBy(2).plusSeconds(1);
    this.delay = client.minBackoff();
    this.executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "baton-watch-" + watches.incrementAndGet());
      t.setDaemon(true);
      thread = t;
      return t;
    });
    // close() waits for the thread: pending timers (a reconnection, a stall) must not hold it.
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  /** Starts a watch; {@code onClose} is told when it is closed. */
  static WatchLoop start(BatonClient client, LeadershipListener listener,
      Consumer<WatchLoop> onClose) {
    WatchLoop w = new WatchLoop(client, listener, onClose);
    w.executor.execute(w::open);
    return w;
  }

  /** Closes the watch because its client is closed, telling the listener so. */
  void closeByClient() {
    close(new BatonException("baton: the client was closed"));
  }

  @Override
  public void close() {
    close(null);
  }

  /** Stops the watch; {@code last}, if any, is the listener's last call. */
  private void close(BatonException last) {
    if (!closeOnce.compareAndSet(false, true)) {
      return;
    }
    closed = true; // from now on no listener call but this last one, and no reconnection
    executor.execute(() -> {
      stopStream();
      if (last != null) {
        callOnError(last);
      }
    });
    executor.shutdown();
    onClose.accept(this);
    if (Thread.currentThread() == thread) {
      return; // closed from a listener: the flag stops further calls
    }
    boolean interrupted = false;
    while (true) {
      try {
        if (executor.awaitTermination(1, TimeUnit.DAYS)) {
          break;
        }
      } catch (InterruptedException e) {
        interrupted = true; // close() must keep its promise; the interrupt is kept for later
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** Opens a stream. */
  private void open() {
    if (closed) {
      return;
    }
    int gen = ++generation;
    connected = false;
    last = null;
    client.reconnectNow();
    com.google.protobuf.Duration heartbeat = com.google.protobuf.Duration.newBuilder()
        .setSeconds(client.heartbeatInterval().getSeconds())
        .setNanos(client.heartbeatInterval().getNano()).build();
    call = client.channel().newCall(LeaderElectionGrpc.getWatchLeadershipMethod(),
        io.grpc.CallOptions.DEFAULT);
    ClientCalls.asyncServerStreamingCall(call,
        WatchLeadershipRequest.newBuilder().setHeartbeatInterval(heartbeat)
            .setClientId(client.clientId()).build(),
        new StreamObserver<>() {
          @Override
          public void onNext(WatchLeadershipResponse m) {
            Leadership l;
            try {
              // Counted from arrival if the sidecar sends no deadline of its own.
              l = Leadership.fromProto(m.getLeadership(), Boottime.floor());
            } catch (BatonException malformed) {
              post(gen, () -> failed(malformed));
              return;
            }
            post(gen, () -> received(l));
          }

          @Override
          public void onError(Throwable t) {
            post(gen, () -> failed(Errors.translate(client.address(), t)));
          }

          @Override
          public void onCompleted() {
            post(gen, () -> failed(new SidecarUnavailableException(client.address(),
                "the sidecar ended the stream (shutting down)", null, null)));
          }
        });
    armStallTimer();
  }

  /** (Re)starts the countdown after which a silent stream is taken as stuck. */
  private void armStallTimer() {
    if (stallTimer != null) {
      stallTimer.cancel(false);
    }
    int gen = generation;
    stallTimer = executor.schedule(() -> {
      if (gen == generation && !closed) {
        failed(new SidecarUnavailableException(client.address(),
            "no message from the sidecar within " + stallTimeout.toMillis() + "ms", null, null));
      }
    }, stallTimeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Runs {@code event} on the watch's thread if it is of the current stream. */
  private void post(int gen, Runnable event) {
    try {
      executor.execute(() -> {
        if (gen == generation && !closed) {
          event.run();
        }
      });
    } catch (RejectedExecutionException e) {
      // closed: nothing more to tell
    }
  }

  private void received(Leadership l) {
    try {
      client.checkLease(l);
    } catch (WrongLeaseException e) {
      failed(e);
      return;
    }
    client.note(l);
    armStallTimer();
    boolean news = !connected || !l.sameState(last);
    connected = true;
    delay = client.minBackoff();
    last = l;
    scheduleExpiryCheck();
    if (news) {
      deliver(l);
    }
  }

  /** While the last state leads, looks at the clock again when its guarantee may have run out. */
  private void scheduleExpiryCheck() {
    if (expiryTimer != null) {
      expiryTimer.cancel(false);
    }
    if (last == null || !last.isLeader()) {
      return;
    }
    Duration left = last.remaining();
    Duration wait = left.compareTo(CLOCK_RECHECK) < 0 ? left : CLOCK_RECHECK;
    int gen = generation;
    expiryTimer = executor.schedule(() -> {
      if (gen != generation || closed || last == null || !last.isLeader()) {
        return;
      }
      if (!last.remaining().isZero()) {
        scheduleExpiryCheck();
        return;
      }
      last = last.expired();
      deliver(last);
    }, wait.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Ends the current stream, tells the listener, and schedules the next attempt. */
  private void failed(BatonException error) {
    stopStream();
    deliverError(error);
    if (closed) {
      return;
    }
    double jitter = 0.8 + 0.4 * ThreadLocalRandom.current().nextDouble();
    long wait = (long) (delay.toNanos() * jitter);
    Duration doubled = delay.multipliedBy(2);
    delay = doubled.compareTo(client.maxBackoff()) > 0 ? client.maxBackoff() : doubled;
    executor.schedule(this::open, wait, TimeUnit.NANOSECONDS);
  }

  private void stopStream() {
    generation++;
    if (call != null) {
      call.cancel("watch ended", null);
      call = null;
    }
    if (stallTimer != null) {
      stallTimer.cancel(false);
    }
    if (expiryTimer != null) {
      expiryTimer.cancel(false);
    }
    last = null;
  }

  private void deliver(Leadership l) {
    if (closed) {
      return;
    }
    try {
      listener.onLeadership(l);
    } catch (RuntimeException e) {
      logger.log(Level.WARNING, "baton: a watch listener threw; the watch goes on", e);
    }
  }

  private void deliverError(BatonException error) {
    if (!closed) {
      callOnError(error);
    }
  }

  private void callOnError(BatonException error) {
    try {
      listener.onError(error);
    } catch (RuntimeException e) {
      logger.log(Level.WARNING, "baton: a watch listener threw; the watch goes on", e);
    }
  }
}

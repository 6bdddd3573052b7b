package io.github.batonsidecar.baton;

import baton.v1.LeaderElectionGrpc;
import baton.v1.LeaderElectionOuterClass.AcknowledgeStepDownRequest;
import baton.v1.LeaderElectionOuterClass.AcknowledgeStepDownResponse;
import baton.v1.LeaderElectionOuterClass.GetLeadershipRequest;
import baton.v1.LeaderElectionOuterClass.ResignRequest;
import baton.v1.LeaderElectionOuterClass.ResignResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The client of the baton sidecar beside this application: asks it, over gRPC on loopback, whether
 * this pod leads, for how long that is guaranteed, and which fencing token to tag writes with.
 *
 * <pre>{@code
 * try (BatonClient baton = BatonClient.create()) {   // 127.0.0.1:4041, or $BATON_GRPC_ADDR
 *   int token = baton.requireLeader(Duration.ofMillis(500));  // NotLeaderException if not
 *   store.put(key, value, token);                             // the store refuses stale tokens
 * }
 * }</pre>
 *
 * <p>It connects lazily and reconnects by itself (with backoff) when the sidecar restarts. Every
 * call fails fast with {@link SidecarUnavailableException} while no sidecar answers, and no call
 * waits longer than the call timeout, so a paused sidecar cannot block the application. Every
 * exception is a {@link BatonException}, and every one means "act as a follower".
 *
 * <p>Each operation comes blocking ({@link #leadership()}) and as a {@link CompletableFuture}
 * ({@link #leadershipAsync()}; cancelling the future cancels the call). {@link #watch} follows the
 * state with a listener; {@link #runWhileLeader} runs the application's leader work for each term
 * and gives the sidecar its step-down acknowledgement when the work ends.
 *
 * <p>Every client sends its {@link #clientId()} with every question, so the promises the sidecar
 * gives it can be given back ({@link #acknowledgeStepDown}). Thread-safe; make one per process
 * and close it when done.
 */
public final class BatonClient implements AutoCloseable {
  /** Where the sidecar serves gRPC by default (baton {@code --grpc-addr}). */
  public static final String DEFAULT_GRPC_ADDR = "127.0.0.1:4041";
  /**
   * The environment variable that overrides {@link #DEFAULT_GRPC_ADDR}: {@code host:port}, {@code
   * :port} (on 127.0.0.1) or {@code unix:PATH}.
   */
  public static final String ENV_GRPC_ADDR = "BATON_GRPC_ADDR";
  /** How long a call may take by default, so a paused sidecar cannot block the caller. */
  public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(2);
  /**
   * How often a watch asks the sidecar to repeat the state when nothing changes, by default; a
   * watch silent for twice that plus a second reconnects.
   */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);
  /** The default bounds of the exponential backoff between reconnection attempts. */
  public static final Duration DEFAULT_MIN_BACKOFF = Duration.ofMillis(100);

  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(2);
  /**
   * What {@link #requireLeader} asks the sidecar for beyond {@code minValidity}: a promise of at
   * most {@code minValidity + REQUIRE_LEADER_SLACK} ({@code max_valid_for}). The slack covers the
   * round trip, so that what is left when the client checks is still at least {@code
   * minValidity}. The caller learns only "at least {@code minValidity} left" and the token, so a
   * longer promise is of no use to it and would only delay a handover when the application does
   * not acknowledge.
   */
  public static final Duration REQUIRE_LEADER_SLACK = Duration.ofSeconds(1);

  private static final Pattern CLIENT_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  private final String address;
  private final String clientId;
  private final Duration callTimeout;
  private final Duration heartbeatInterval;
  private final Duration minBackoff;
  private final Duration maxBackoff;
  private final ExpectedLease expectedLease;
  private final ManagedChannel channel;
  private final boolean ownsChannel;
  private final Set<WatchLoop> watches = ConcurrentHashMap.newKeySet(); // open ones
  private final HeardDeadlines heard = new HeardDeadlines();
  private volatile boolean closed;

  private BatonClient(Builder b, String address, ManagedChannel channel, boolean ownsChannel) {
    this.address = address;
    this.clientId = b.clientId != null ? b.clientId : randomClientId();
    this.callTimeout = b.callTimeout;
    this.heartbeatInterval = b.heartbeatInterval;
    this.minBackoff = b.minBackoff;
    this.maxBackoff = b.maxBackoff;
    this.expectedLease = b.expectedLease;
    this.channel = channel;
    this.ownsChannel = ownsChannel;
  }

  /** A client with the defaults: the sidecar at {@code $BATON_GRPC_ADDR} or 127.0.0.1:4041. */
  public static BatonClient create() {
    return builder().build();
  }

  /** A builder of a client with other than the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** The sidecar address this client uses ({@code host:port} or {@code unix:PATH}). */
  public String address() {
    return address;
  }

  /** The name this client gives the sidecar with every question (see {@link Builder#clientId}). */
  public String clientId() {
    return clientId;
  }

  /**
   * Stops this client's watches (each listener's last call is {@link LeadershipListener#onError}
   * saying so; a {@link #runWhileLeader} ends its work and throws), then closes the connection
   * (unless it was given to the builder); calls in flight fail. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    for (WatchLoop w : watches) {
      w.closeByClient();
    }
    if (ownsChannel) {
      channel.shutdownNow();
    }
  }

  boolean isClosed() {
    return closed;
  }

  // --- asking --------------------------------------------------------------------------------

  /**
   * The current state, from the sidecar's latest snapshot (it never waits on the Kubernetes API).
   *
   * @throws SidecarUnavailableException when no sidecar answers within the call timeout
   * @throws WrongLeaseException when the sidecar serves another Lease than the expected one
   * @throws BatonException on any other failure, or when the calling thread is interrupted (its
   *     interrupt status is kept)
   */
  public Leadership leadership() {
    return await(leadershipAsync());
  }

  /** {@link #leadership()}, as a future; cancelling it cancels the call. */
  public CompletableFuture<Leadership> leadershipAsync() {
    return leadershipAsync(GetLeadershipRequest.newBuilder().setClientId(clientId).build());
  }

  /** {@link #leadershipAsync()} with {@code request}. */
  private CompletableFuture<Leadership> leadershipAsync(GetLeadershipRequest request) {
    Duration sent = Boottime.floor();
    return then(unary(LeaderElectionGrpc.getGetLeadershipMethod(), request),
        m -> heard.note(checkLease(Leadership.fromProto(m, sent))));
  }

  /**
   * Whether this pod leads right now.
   *
   * @throws SidecarUnavailableException when no sidecar answers: treat that as "not leader"
   * @throws BatonException as {@link #leadership()}
   */
  public boolean isLeader() {
    return leadership().isLeader();
  }

  /** {@link #isLeader()}, as a future. */
  public CompletableFuture<Boolean> isLeaderAsync() {
    return then(leadershipAsync(), Leadership::isLeader);
  }

  /**
   * The fencing token to tag a write with, if this pod leads with at least {@code minValidity}
   * (and more than zero) of guaranteed leadership left (counted from when the sidecar answered). Ask right before each
   * write, with {@code minValidity} the time the write needs, and send the token with it.
   *
   * <p>It asks the sidecar for a promise of at most {@code minValidity +} {@link
   * #REQUIRE_LEADER_SLACK}, so an application that never acknowledges holds up a handover by at
   * most that much.
   *
   * @throws NotLeaderException when this pod does not lead, or not for long enough
   * @throws SidecarUnavailableException when no sidecar answers
   * @throws BatonException as {@link #leadership()}
   */
  public int requireLeader(Duration minValidity) {
    return await(requireLeaderAsync(minValidity));
  }

  /** {@link #requireLeader}, as a future. */
  public CompletableFuture<Integer> requireLeaderAsync(Duration minValidity) {
    Objects.requireNonNull(minValidity);
    Duration bound = requireLeaderBound(minValidity);
    GetLeadershipRequest request = GetLeadershipRequest.newBuilder().setClientId(clientId)
        .setMaxValidFor(com.google.protobuf.Duration.newBuilder()
            .setSeconds(bound.getSeconds()).setNanos(bound.getNano()))
        .build();
    return then(leadershipAsync(request),
        l -> requireValidity(l, minValidity, Boottime.ceiling()).fencingToken());
  }

  /**
   * The promise {@link #requireLeader}{@code (minValidity)} asks the sidecar for: {@code
   * minValidity} (none if negative) plus {@link #REQUIRE_LEADER_SLACK}.
   */
  static Duration requireLeaderBound(Duration minValidity) {
    return (minValidity.isNegative() ? Duration.ZERO : minValidity).plus(REQUIRE_LEADER_SLACK);
  }

  /**
   * The decision of {@link #requireLeader} on {@code l} at the {@code CLOCK_BOOTTIME} reading
   * {@code now}: {@code l} if it leads with at least {@code minValidity} (and more than zero) left, else a {@link
   * NotLeaderException}.
   */
  static Leadership requireValidity(Leadership l, Duration minValidity, Duration now) {
    Duration remaining = l.remainingAt(now);
    if (!l.isLeader() || remaining.isZero() || remaining.compareTo(minValidity) < 0) {
      throw new NotLeaderException(l, minValidity, remaining);
    }
    return l;
  }

  /**
   * Blocks until this pod leads and returns that state. It keeps waiting through sidecar restarts
   * and outages.
   *
   * @throws InterruptedException when the calling thread is interrupted
   */
  public Leadership waitUntilLeader() throws InterruptedException {
    CompletableFuture<Leadership> waiting = waitUntilLeaderAsync();
    try {
      return waiting.get();
    } catch (ExecutionException e) {
      throw new BatonException("baton: waiting for leadership: " + e.getCause(), e.getCause());
    } finally {
      waiting.cancel(false); // stops the watch if this thread was interrupted
    }
  }

  /**
   * {@link #waitUntilLeader()} for at most {@code timeout}.
   *
   * @throws TimeoutException when this pod does not lead by then (its message names the last
   *     error, if the sidecar could not be reached)
   * @throws InterruptedException when the calling thread is interrupted
   */
  public Leadership waitUntilLeader(Duration timeout)
      throws InterruptedException, TimeoutException {
    WaitForLeader waiting = new WaitForLeader();
    try {
      return waiting.start(this).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      throw new BatonException("baton: waiting for leadership: " + e.getCause(), e.getCause());
    } catch (TimeoutException e) {
      BatonException last = waiting.lastError;
      throw new TimeoutException("baton: not leader after " + timeout.toMillis() + "ms"
          + (last != null ? " (last error: " + last.getMessage() + ")" : ""));
    } finally {
      waiting.future.cancel(false);
    }
  }

  /**
   * A future of the first state in which this pod leads; it keeps waiting through sidecar
   * restarts. Cancelling it stops the wait.
   */
  public CompletableFuture<Leadership> waitUntilLeaderAsync() {
    return new WaitForLeader().start(this);
  }

  /** The watch behind {@link #waitUntilLeader}: completes its future with the first leader state. */
  private static final class WaitForLeader implements LeadershipListener {
    final CompletableFuture<Leadership> future = new CompletableFuture<>();
    volatile BatonException lastError;

    CompletableFuture<Leadership> start(BatonClient client) {
      Watch watch = client.watch(this);
      future.whenComplete((l, e) -> watch.close());
      return future;
    }

    @Override
    public void onLeadership(Leadership state) {
      if (state.isLeader()) {
        future.complete(state);
      }
    }

    @Override
    public void onError(BatonException error) {
      lastError = error;
    }
  }

  // --- stepping down ---------------------------------------------------------------------------

  /**
   * Asks the sidecar to step down now and release the Lease, so another pod takes over at once.
   * When it returns, this sidecar already answers not-leader; it goes on campaigning and may lead
   * again later. With an expected Lease ({@link Builder#expectLease}) the sidecar's Lease is
   * checked first, so this client never resigns another workload's leadership.
   *
   * @return whether this pod led when the sidecar was asked
   * @throws BatonException as {@link #leadership()}
   */
  public boolean resign() {
    return await(resignAsync());
  }

  /** {@link #resign()}, as a future. */
  public CompletableFuture<Boolean> resignAsync() {
    if (!expectedLease.isAny()) {
      return leadershipAsync().thenCompose(checked -> resignUnchecked());
    }
    return resignUnchecked();
  }

  private CompletableFuture<Boolean> resignUnchecked() {
    return then(unary(LeaderElectionGrpc.getResignMethod(), ResignRequest.getDefaultInstance()),
        ResignResponse::getWasLeader);
  }

  /**
   * Tells the sidecar that this application has stopped acting on the leadership of the term with
   * fencing token {@code fencingToken}: its leader work was cancelled and has ended. It names the
   * latest deadline ({@link Leadership#validUntilBoottime()}) among the leader answers of that
   * term this client has received so far (zero, naming nothing, if none), and the promises the
   * sidecar gave this client up to that deadline are void from then on, so a sidecar that is
   * stepping down (shutdown or resign) need not wait for them to run out before it releases the
   * Lease. A promise given later (the sidecar renewed in between) stays outstanding however late
   * the acknowledgement arrives, and so does one given to another process using the same client
   * id.
   *
   * <p>Call it only once nothing in this process acts on this client's answers for that term any
   * more; {@link #runWhileLeader} calls it for you. An application that never acknowledges still
   * gets a safe handover, only a slower one: the sidecar then waits until the last promise it gave
   * lapses (up to its {@code --renew-deadline} after the last answer).
   *
   * @return whether that settled this client id's promises of the term
   * @throws BatonException as {@link #leadership()}
   */
  public boolean acknowledgeStepDown(int fencingToken) {
    return await(acknowledgeStepDownAsync(fencingToken));
  }

  /**
   * {@link #acknowledgeStepDown(int)}, naming the deadline {@code validUntilBoottime} (that of the
   * last answer acted on: {@link Leadership#validUntilBoottime()}) instead.
   */
  public boolean acknowledgeStepDown(int fencingToken, Duration validUntilBoottime) {
    return await(acknowledgeStepDownAsync(fencingToken, validUntilBoottime));
  }

  /** {@link #acknowledgeStepDown(int)}, as a future. */
  public CompletableFuture<Boolean> acknowledgeStepDownAsync(int fencingToken) {
    return acknowledgeStepDownAsync(fencingToken, heard.upTo(fencingToken));
  }

  /** {@link #acknowledgeStepDown(int, Duration)}, as a future. */
  public CompletableFuture<Boolean> acknowledgeStepDownAsync(int fencingToken,
      Duration validUntilBoottime) {
    Objects.requireNonNull(validUntilBoottime);
    return then(unary(LeaderElectionGrpc.getAcknowledgeStepDownMethod(),
        AcknowledgeStepDownRequest.newBuilder().setClientId(clientId)
            .setFencingToken(fencingToken)
            .setValidUntilBoottime(com.google.protobuf.Duration.newBuilder()
                .setSeconds(validUntilBoottime.getSeconds())
                .setNanos(validUntilBoottime.getNano()))
            .build()),
        AcknowledgeStepDownResponse::getAcknowledged);
  }

  // --- following -------------------------------------------------------------------------------

  /**
   * Follows this pod's leadership until the returned watch is closed. The listener gets the current
   * state first, then each change of leader, holder, fencing token, stepping-down, observed or
   * Lease uid (not every renew).
   *
   * <p>Between changes the watch also watches the clock: when a leader's guarantee ({@link
   * Leadership#validUntilBoottime()}) runs out before the sidecar confirms it again, the listener
   * gets the same state with {@code isLeader} false, so a paused or wedged sidecar cannot leave
   * the application believing it leads. It compares the guarantee with {@code CLOCK_BOOTTIME} at
   * least every 100 ms while one runs, so after a suspend of the machine a lapsed guarantee ends
   * at once.
   *
   * <p>When the stream breaks, goes silent for twice the heartbeat interval plus a second, or
   * cannot be opened, the listener gets {@link LeadershipListener#onError} (a {@link
   * SidecarUnavailableException} when no sidecar answers) and the watch reconnects with
   * exponential backoff; the first state after a reconnect is always delivered.
   */
  public Watch watch(LeadershipListener listener) {
    Objects.requireNonNull(listener);
    if (closed) {
      throw new IllegalStateException("baton: the client is closed");
    }
    WatchLoop w = WatchLoop.start(this, listener, watches::remove);
    watches.add(w);
    if (closed) { // close() ran meanwhile and may have missed it
      w.closeByClient();
    }
    return w;
  }

  /**
   * Runs {@code work} whenever this pod leads, and gives the sidecar its acknowledgement when the
   * work ends, so a graceful handover (sidecar shutdown or resign) takes milliseconds instead of a
   * renew deadline:
   *
   * <pre>{@code
   * baton.runWhileLeader(term -> {
   *   while (!Thread.currentThread().isInterrupted()) {
   *     int token = baton.requireLeader(Duration.ofMillis(500));
   *     store.put(key, value, token);
   *     Thread.sleep(1000);
   *   }
   * });
   * }</pre>
   *
   * <p>It watches the sidecar ({@link #watch}). When a state says this pod leads, it calls {@code
   * work} on a thread of its own with that state, and interrupts that thread as soon as the term
   * ends: a state says not leader or stepping down, the fencing token or the sidecar changes, the
   * guarantee runs out without news, or the sidecar cannot be reached. It then waits for {@code
   * work} to return, and only then acknowledges the term ({@link #acknowledgeStepDown}; a failed
   * acknowledgement only makes the handover slower, so it is not reported). An exception {@code
   * work} throws after its interrupt is dropped. If {@code work} returns while the term goes on,
   * the term is acknowledged: if it returned normally, it runs again at the next term; if it
   * threw, this method throws that exception (wrapped in an {@link ExecutionException}).
   *
   * <p>It runs until the calling thread is interrupted (run it on a thread of its own, or submit
   * it to an executor and cancel the future with {@code cancel(true)}); it then ends the running
   * work, waits for it and acknowledges, and throws {@link InterruptedException}.
   *
   * <p>The acknowledgement speaks for this client (its {@link #clientId()}): while this runs, do
   * not act as leader on this client's other answers outside {@code work}.
   *
   * @throws InterruptedException when the calling thread is interrupted
   * @throws ExecutionException when {@code work} threw while its term went on
   * @throws BatonException when this client is closed meanwhile (the work is ended first)
   */
  public void runWhileLeader(LeaderWork work) throws InterruptedException, ExecutionException {
    new LeaderLoop(this, Objects.requireNonNull(work)).run();
  }

  // --- plumbing ----------------------------------------------------------------------------------

  ManagedChannel channel() {
    return channel;
  }

  Duration heartbeatInterval() {
    return heartbeatInterval;
  }

  Duration minBackoff() {
    return minBackoff;
  }

  Duration maxBackoff() {
    return maxBackoff;
  }

  /** {@code l} if it comes from a sidecar of the expected Lease, else a WrongLeaseException. */
  Leadership checkLease(Leadership l) {
    return expectedLease.check(address, l);
  }

  /** Records the deadline of an answer this client received, for {@link #acknowledgeStepDown}. */
  void note(Leadership l) {
    heard.note(l);
  }

  /**
   * Makes the channel try to connect at once if it is waiting out gRPC's own reconnect backoff
   * (which grows to two minutes): the sidecar may be back, and a call must not fail for a
   * connection attempt that was never made. This client's backoff is its own (watches) or none
   * (calls fail fast).
   */
  void reconnectNow() {
    if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
      channel.resetConnectBackoff();
    }
  }

  /** One unary call, bounded by the call timeout; cancelling the future cancels the call. */
  private <Req, Resp> CompletableFuture<Resp> unary(MethodDescriptor<Req, Resp> method, Req req) {
    reconnectNow();
    ClientCall<Req, Resp> call = channel.newCall(method,
        CallOptions.DEFAULT.withDeadlineAfter(callTimeout.toNanos(), TimeUnit.NANOSECONDS));
    CompletableFuture<Resp> result = new CompletableFuture<>();
    ClientCalls.asyncUnaryCall(call, req, new StreamObserver<>() {
      @Override
      public void onNext(Resp value) {
        result.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        result.completeExceptionally(Errors.translate(address, t));
      }

      @Override
      public void onCompleted() {}
    });
    result.whenComplete((r, e) -> {
      if (result.isCancelled()) {
        call.cancel("cancelled by the application", null);
      }
    });
    return result;
  }

  /** {@code base.thenApply(fn)}, whose cancellation cancels {@code base} (and so the call). */
  private static <A, B> CompletableFuture<B> then(CompletableFuture<A> base, Function<A, B> fn) {
    CompletableFuture<B> next = base.thenApply(fn);
    next.whenComplete((r, e) -> {
      if (next.isCancelled()) {
        base.cancel(true);
      }
    });
    return next;
  }

  /** The result of a call, for the blocking API: its BatonException is thrown as it is. */
  static <T> T await(CompletableFuture<T> future) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new BatonException("baton: interrupted", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof BatonException b) {
        throw b;
      }
      throw new BatonException("baton: " + e.getCause(), e.getCause());
    }
  }

  /** {@code id} if it is 1 to 64 characters from [A-Za-z0-9._-]. */
  static String checkClientId(String id) {
    if (!CLIENT_ID.matcher(id).matches()) {
      throw new IllegalArgumentException("baton: client ID \"" + id
          + "\" is not 1 to 64 characters from [A-Za-z0-9._-]");
    }
    return id;
  }

  static String randomClientId() {
    byte[] b = new byte[8];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * The address a client without {@link Builder#address} uses: {@code $BATON_GRPC_ADDR} if set,
   * else {@link #DEFAULT_GRPC_ADDR}, normalized.
   *
   * @throws IllegalArgumentException if the variable is not {@code host:port}, {@code :port} or
   *     {@code unix:PATH}
   */
  public static String resolveAddress() {
    String env = System.getenv(ENV_GRPC_ADDR);
    if (env == null || env.isEmpty()) {
      return DEFAULT_GRPC_ADDR;
    }
    try {
      return normalizeAddress(env);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("baton: $" + ENV_GRPC_ADDR + ": " + e.getMessage(), e);
    }
  }

  /** {@code host:port} (":port" meaning 127.0.0.1:port) or {@code unix:PATH}, checked. */
  static String normalizeAddress(String addr) {
    if (addr.startsWith("unix:") && addr.length() > "unix:".length()) {
      return addr;
    }
    int colon = addr.lastIndexOf(':');
    String host = colon >= 0 ? addr.substring(0, colon) : "";
    String port = colon >= 0 ? addr.substring(colon + 1) : "";
    boolean bracketed = host.startsWith("[") && host.endsWith("]");
    boolean portOk = port.matches("[0-9]{1,5}") && Integer.parseInt(port) <= 65535;
    if (colon < 0 || !portOk || (host.contains(":") && !bracketed)) {
      throw new IllegalArgumentException("\"" + addr + "\" is not host:port, :port or unix:PATH");
    }
    return (host.isEmpty() ? "127.0.0.1" : host) + ":" + port;
  }

  /** Options of a {@link BatonClient}; every one has a default. Not thread-safe. */
  public static final class Builder {
    private String address;
    private String clientId;
    private Duration callTimeout = DEFAULT_CALL_TIMEOUT;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private Duration minBackoff = DEFAULT_MIN_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
    private ExpectedLease expectedLease = ExpectedLease.ANY;
    private ManagedChannel channel;

    private Builder() {}

    /**
     * The sidecar's gRPC address: {@code host:port}, {@code :port} (on 127.0.0.1) or {@code
     * unix:PATH}. Default: {@code $BATON_GRPC_ADDR}, else {@link #DEFAULT_GRPC_ADDR}.
     */
    public Builder address(String address) {
      this.address = normalizeAddress(Objects.requireNonNull(address));
      return this;
    }

    /**
     * The name this client gives the sidecar with every question: 1 to 64 characters from {@code
     * [A-Za-z0-9._-]}. The sidecar records the leader answers it gives under this name as promises
     * that {@link BatonClient#acknowledgeStepDown} gives back. Default: 16 random hex digits per
     * client, which is what a client should normally use.
     */
    public Builder clientId(String clientId) {
      this.clientId = checkClientId(clientId);
      return this;
    }

    /** How long one call may take (default {@link #DEFAULT_CALL_TIMEOUT}). */
    public Builder callTimeout(Duration timeout) {
      this.callTimeout = positive(timeout, "call timeout");
      return this;
    }

    /**
     * How often a watch asks the sidecar to repeat the current state when nothing changes (default
     * {@link #DEFAULT_HEARTBEAT_INTERVAL}). A stream silent for twice that plus a second is taken
     * as stuck and reconnected.
     */
    public Builder heartbeatInterval(Duration interval) {
      this.heartbeatInterval = positive(interval, "heartbeat interval");
      return this;
    }

    /**
     * The exponential backoff between reconnection attempts (defaults {@link
     * #DEFAULT_MIN_BACKOFF}, {@link #DEFAULT_MAX_BACKOFF}), with 20% jitter.
     */
    public Builder reconnectBackoff(Duration min, Duration max) {
      positive(min, "minimum backoff");
      if (max.compareTo(min) < 0) {
        throw new IllegalArgumentException("baton: maximum backoff below the minimum");
      }
      this.minBackoff = min;
      this.maxBackoff = max;
      return this;
    }

    /**
     * Refuses answers from a sidecar that serves another Lease than {@code namespace/name} (with
     * {@code hostNetwork} two workloads' sidecars may share a network namespace, and a wrong port
     * would make this application hear the other's leader): every call and watch then fails with
     * {@link WrongLeaseException}. Either may be null for "any".
     */
    public Builder expectLease(String namespace, String name) {
      this.expectedLease = new ExpectedLease(namespace, name);
      return this;
    }

    /**
     * Uses {@code channel} instead of connecting to {@link #address}, for interceptors, an
     * in-process server in tests, or other transport settings; {@link BatonClient#close()} then
     * leaves it open. The address is still what errors name.
     */
    public Builder channel(ManagedChannel channel) {
      this.channel = Objects.requireNonNull(channel);
      return this;
    }

    /**
     * The client. It does not connect yet: a missing sidecar shows as {@link
     * SidecarUnavailableException} on the first call.
     *
     * @throws IllegalArgumentException if {@code $BATON_GRPC_ADDR} is malformed
     */
    public BatonClient build() {
      String addr = address != null ? address : resolveAddress();
      if (channel != null) {
        return new BatonClient(this, addr, channel, false);
      }
      String target = addr.startsWith("unix:") ? addr : "dns:///" + addr;
      ManagedChannel ch = Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
          // Loopback to one sidecar: no retries of our own (a failure means "follower"), and no
          // proxy however the JVM is configured.
          .disableRetry()
          .proxyDetector(socketAddress -> null)
          .build();
      return new BatonClient(this, addr, ch, true);
    }

    private static Duration positive(Duration d, String what) {
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException("baton: " + what + " must be positive");
      }
      return d;
    }
  }
}

package io.github.batonsidecar.baton;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The sidecar's HTTP API ({@code GET /leader}, {@code POST /resign}, {@code POST /leader/ack}),
 * for where the gRPC port is not reachable or gRPC is not wanted: the same questions as {@link
 * BatonClient}, each one request on the JDK's own HTTP client, with the same answers and
 * exceptions. It has no watch (poll {@link #leadership()}, or use {@link BatonClient#watch}).
 *
 * <p>Every request carries this client's {@link #clientId()}, so {@link #acknowledgeStepDown}
 * gives back the promises its answers made. Thread-safe; nothing to close.
 */
public final class BatonHttpClient {
  /** Where the sidecar serves HTTP by default (baton {@code --http-addr}). */
  public static final String DEFAULT_HTTP_ADDR = "127.0.0.1:4040";
  /** The environment variable that overrides {@link #DEFAULT_HTTP_ADDR}: {@code host:port}. */
  public static final String ENV_HTTP_ADDR = "BATON_HTTP_ADDR";

  private final String address;
  private final String clientId;
  private final Duration timeout;
  private final ExpectedLease expectedLease;
  private final HttpClient http;
  private final HeardDeadlines heard = new HeardDeadlines();

  private BatonHttpClient(Builder b, String address) {
    this.address = address;
    this.clientId = b.clientId != null ? b.clientId : BatonClient.randomClientId();
    this.timeout = b.timeout;
    this.expectedLease = b.expectedLease;
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(timeout).build();
  }

  /** A client of the sidecar at {@code $BATON_HTTP_ADDR} or 127.0.0.1:4040. */
  public static BatonHttpClient create() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The sidecar address this client uses ({@code host:port}). */
  public String address() {
    return address;
  }

  /** The name this client gives the sidecar with every request. */
  public String clientId() {
    return clientId;
  }

  /**
   * The current state ({@code GET /leader}).
   *
   * @throws SidecarUnavailableException when the request is refused, times out, or is answered
   *     503
   * @throws WrongLeaseException when the sidecar serves another Lease than the expected one
   * @throws BatonException on any other answer (its {@link BatonException#httpStatus()}), or one
   *     that is not a Leadership
   */
  public Leadership leadership() {
    return BatonClient.await(leadershipAsync());
  }

  /** {@link #leadership()}, as a future. */
  public CompletableFuture<Leadership> leadershipAsync() {
    return leadershipAsync("/leader?client_id=" + clientId);
  }

  /** {@link #leadershipAsync()} with {@code pathAndQuery}. */
  private CompletableFuture<Leadership> leadershipAsync(String pathAndQuery) {
    Duration sent = Boottime.floor();
    return send("GET", pathAndQuery,
        body -> heard.note(expectedLease.check(address, Leadership.fromJson(body, sent))));
  }

  /** Whether this pod leads right now; throws as {@link #leadership()}. */
  public boolean isLeader() {
    return leadership().isLeader();
  }

  /**
   * The fencing token to tag a write with, if this pod leads with at least {@code minValidity}
   * (and more than zero) of guaranteed leadership left, as {@link BatonClient#requireLeader}. It
   * asks for a promise of at most {@code minValidity +} {@link BatonClient#REQUIRE_LEADER_SLACK}
   * ({@code ?max_valid_for=}, in milliseconds rounded up).
   *
   * @throws NotLeaderException when this pod does not lead, or not for long enough
   * @throws BatonException as {@link #leadership()}
   */
  public int requireLeader(Duration minValidity) {
    Objects.requireNonNull(minValidity);
    Duration bound = BatonClient.requireLeaderBound(minValidity);
    long boundMs = bound.toMillis() + (bound.toNanosPart() % 1_000_000 == 0 ? 0 : 1);
    Leadership l = BatonClient.await(leadershipAsync(
        "/leader?client_id=" + clientId + "&max_valid_for=" + boundMs + "ms"));
    return BatonClient.requireValidity(l, minValidity, Boottime.ceiling()).fencingToken();
  }

  /**
   * Steps down now and releases the Lease ({@code POST /resign}), as {@link BatonClient#resign}.
   *
   * @return whether this pod led when the sidecar was asked
   */
  public boolean resign() {
    if (!expectedLease.isAny()) {
      leadership();
    }
    return BatonClient.await(send("POST", "/resign",
        body -> json(body).get("wasLeader").getAsBoolean()));
  }

  /**
   * Gives back the promises of the term {@code fencingToken} ({@code POST /leader/ack}) up to the
   * latest deadline this client has received in it, as {@link BatonClient#acknowledgeStepDown}.
   *
   * @return whether that settled this client id's promises of the term
   */
  public boolean acknowledgeStepDown(int fencingToken) {
    return acknowledgeStepDown(fencingToken, heard.upTo(fencingToken));
  }

  /**
   * {@link #acknowledgeStepDown(int)}, naming the deadline {@code validUntilBoottime} (that of the
   * last answer acted on) instead.
   */
  public boolean acknowledgeStepDown(int fencingToken, Duration validUntilBoottime) {
    Objects.requireNonNull(validUntilBoottime);
    return BatonClient.await(send("POST",
        "/leader/ack?client_id=" + clientId + "&fencing_token=" + fencingToken
            + "&valid_until_boottime=" + HeardDeadlines.json(validUntilBoottime),
        body -> json(body).get("acknowledged").getAsBoolean()));
  }

  private static JsonObject json(String body) {
    try {
      return JsonParser.parseString(body).getAsJsonObject();
    } catch (RuntimeException e) {
      throw new BatonException("baton: unexpected answer: " + body, e);
    }
  }

  /** One request; a 200 answer's body goes through {@code convert}. */
  private <T> CompletableFuture<T> send(String method, String pathAndQuery,
      Function<String, T> convert) {
    HttpRequest req = HttpRequest.newBuilder(URI.create("http://" + address + pathAndQuery))
        .timeout(timeout).method(method, HttpRequest.BodyPublishers.noBody()).build();
    return http.sendAsync(req, HttpResponse.BodyHandlers.ofString())
        .handle((resp, failure) -> {
          if (failure != null) {
            throw Errors.translateHttp(address, failure);
          }
          if (resp.statusCode() != 200) {
            throw Errors.httpStatus(address, resp.statusCode(), resp.body());
          }
          return convert.apply(resp.body());
        });
  }

  /** Options of a {@link BatonHttpClient}. Not thread-safe. */
  public static final class Builder {
    private String address;
    private String clientId;
    private Duration timeout = BatonClient.DEFAULT_CALL_TIMEOUT;
    private ExpectedLease expectedLease = ExpectedLease.ANY;

    private Builder() {}

    /**
     * The sidecar's HTTP address, {@code host:port} or {@code :port}. Default: {@code
     * $BATON_HTTP_ADDR}, else {@link #DEFAULT_HTTP_ADDR}.
     */
    public Builder address(String address) {
      this.address = httpAddress(address);
      return this;
    }

    /** As {@link BatonClient.Builder#clientId}. */
    public Builder clientId(String clientId) {
      this.clientId = BatonClient.checkClientId(clientId);
      return this;
    }

    /** How long one request may take (default {@link BatonClient#DEFAULT_CALL_TIMEOUT}). */
    public Builder timeout(Duration timeout) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("baton: timeout must be positive");
      }
      this.timeout = timeout;
      return this;
    }

    /** As {@link BatonClient.Builder#expectLease}. */
    public Builder expectLease(String namespace, String name) {
      this.expectedLease = new ExpectedLease(namespace, name);
      return this;
    }

    /**
     * The client.
     *
     * @throws IllegalArgumentException if {@code $BATON_HTTP_ADDR} is malformed
     */
    public BatonHttpClient build() {
      String addr = address;
      if (addr == null) {
        String env = System.getenv(ENV_HTTP_ADDR);
        addr = env == null || env.isEmpty() ? DEFAULT_HTTP_ADDR : httpAddress(env);
      }
      return new BatonHttpClient(this, addr);
    }

    private static String httpAddress(String addr) {
      String a = BatonClient.normalizeAddress(Objects.requireNonNull(addr));
      if (a.startsWith("unix:")) {
        throw new IllegalArgumentException("baton: the HTTP client needs host:port, not " + addr);
      }
      return a;
    }
  }
}

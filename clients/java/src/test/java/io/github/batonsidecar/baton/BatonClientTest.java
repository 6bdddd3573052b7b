package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.grpc.stub.ServerCallStreamObserver;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class BatonClientTest {
  @Test
  void addressesAreNormalized() {
    assertEquals("127.0.0.1:4041", BatonClient.normalizeAddress(":4041"));
    assertEquals("10.0.0.1:80", BatonClient.normalizeAddress("10.0.0.1:80"));
    assertEquals("[::1]:4041", BatonClient.normalizeAddress("[::1]:4041"));
    assertEquals("localhost:1", BatonClient.normalizeAddress("localhost:1"));
    assertEquals("unix:/run/baton.sock", BatonClient.normalizeAddress("unix:/run/baton.sock"));
    for (String bad : new String[] {"4041", "host:", "host:port", "::1:4041", "h:99999", "unix:"}) {
      assertThrows(IllegalArgumentException.class, () -> BatonClient.normalizeAddress(bad), bad);
    }
  }

  @Test
  void clientIdIsRandomUnlessSetAndMustBeWellFormed() {
    try (BatonClient a = BatonClient.builder().address(":1").build();
        BatonClient b = BatonClient.builder().address(":1").build();
        BatonClient named = BatonClient.builder().address(":1").clientId("web-0.app_1").build()) {
      assertTrue(a.clientId().matches("[0-9a-f]{16}"), a.clientId());
      assertNotEquals(a.clientId(), b.clientId());
      assertEquals("web-0.app_1", named.clientId());
    }
    assertThrows(IllegalArgumentException.class, () -> BatonClient.builder().clientId(""));
    assertThrows(IllegalArgumentException.class, () -> BatonClient.builder().clientId("a b"));
    assertThrows(IllegalArgumentException.class,
        () -> BatonClient.builder().clientId("x".repeat(65)));
  }

  private static String manager(String identity) {
    return new Leadership(false, identity, "", 0, BigInteger.ZERO, "", "", "",
        java.util.Optional.empty(), java.util.Optional.empty(), Duration.ZERO, Duration.ZERO,
        Duration.ZERO, false, false).fieldManager();
  }

  @Test
  void fieldManagerIsTheIdentityWhenTheApiServerTakesIt() {
    for (String id : new String[] {"web-0_3f9a1c", "a".repeat(128), "pod name with spaces", ""}) {
      assertEquals(id, manager(id));
    }
  }

  /** The same identities and managers as the other clients' tests. */
  @Test
  void fieldManagerIsTheSameInEveryClient() {
    assertEquals("x".repeat(111) + "-090fac22cfc2b4ad", manager("x".repeat(200) + "_1"));
    assertEquals("tab_here-778309ed1f28b0f9", manager("tab\there"));
    assertEquals("__n__code-b1b0d40350a25beb", manager("ünïcode"));
  }

  @Test
  void acknowledgementsNameTheLatestDeadlineThisClientReceived() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      fake.answer = FakeSidecar.leader(5, Duration.ofSeconds(5));
      c.leadership();
      fake.answer = FakeSidecar.leader(5, Duration.ofSeconds(6));
      Duration latest = c.leadership().validUntilBoottime();
      // An earlier answer after a later one (another process's, say) changes nothing.
      fake.answer = FakeSidecar.leader(5, Duration.ofSeconds(1));
      c.leadership();
      assertTrue(c.acknowledgeStepDown(5));
      // A term it was never answered in: it names nothing.
      c.acknowledgeStepDown(4);
      // Or the deadline it is given.
      c.acknowledgeStepDown(5, Duration.ofSeconds(42));
      assertEquals(java.util.List.of(latest, Duration.ZERO, Duration.ofSeconds(42)),
          fake.ackedDeadlines);
    }
  }

  @Test
  void requireLeaderAnswersTheTokenOrNotLeader() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      fake.answer = FakeSidecar.leader(9, Duration.ofSeconds(5));
      assertEquals(9, c.requireLeader(Duration.ofSeconds(1)));
      assertEquals(9, c.requireLeaderAsync(Duration.ZERO).get());
      NotLeaderException tooShort = assertThrows(NotLeaderException.class,
          () -> c.requireLeader(Duration.ofSeconds(6)));
      assertTrue(tooShort.getMessage().contains("ms of guaranteed leadership left"),
          tooShort.getMessage());
      fake.answer = FakeSidecar.leader(9, Duration.ofSeconds(5)).toBuilder().setIsLeader(false)
          .setHolderIdentity("other").build();
      NotLeaderException follower = assertThrows(NotLeaderException.class,
          () -> c.requireLeader(Duration.ZERO));
      assertEquals("baton: not leader: the Lease is held by other", follower.getMessage());
      assertEquals(Duration.ZERO, follower.leadership().validUntilBoottime());
    }
  }

  @Test
  void revisionsOfEverySizeUpTo128BitsAreReadAndOthersRefused() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      String max = "340282366920938463463374607431768211455";
      fake.answer = FakeSidecar.leader(9, Duration.ofSeconds(5)).toBuilder()
          .setFencingRevisionDecimal(max).build();
      assertEquals(new BigInteger(max), c.leadership().fencingRevision());
      // From a sidecar of 0.2.0 or earlier: the int64 alone.
      fake.answer = FakeSidecar.leader(9, Duration.ofSeconds(5)).toBuilder()
          .setFencingRevision(4711).build();
      assertEquals(BigInteger.valueOf(4711), c.leadership().fencingRevision());
      fake.answer = FakeSidecar.leader(9, Duration.ofSeconds(5)).toBuilder()
          .setFencingRevision(4711).setFencingRevisionDecimal("04711").build();
      BatonException e = assertThrows(BatonException.class, c::leadership);
      assertTrue(!(e instanceof SidecarUnavailableException), e.toString());
      assertThrows(BatonException.class, () -> c.requireLeader(Duration.ZERO));
    }
  }

  @Test
  void requireLeaderAsksForMinValidityPlusTheSlackAndNothingElseDoes() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      fake.answer = FakeSidecar.leader(9, Duration.ofSeconds(10));
      assertEquals(9, c.requireLeader(Duration.ofMillis(2500)));
      assertEquals(9, c.requireLeaderAsync(Duration.ZERO).get());
      c.leadership();
      c.isLeader();
      c.leadershipAsync().get();
      try (Watch w = c.watch(l -> {})) {
        fake.nextStream();
      }
      Duration none = Duration.ofNanos(-1);
      assertEquals(Duration.ofSeconds(1), BatonClient.REQUIRE_LEADER_SLACK);
      assertEquals(java.util.List.of(Duration.ofMillis(3500), Duration.ofSeconds(1), none, none,
          none, none), fake.bounds);
    }
  }

  @Test
  void httpRequireLeaderAsksForMinValidityPlusTheSlackAndLeadershipDoesNot() throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    java.util.List<String> queries = new java.util.concurrent.CopyOnWriteArrayList<>();
    server.createContext("/leader", exchange -> {
      queries.add(exchange.getRequestURI().getRawQuery());
      byte[] body = ("{\"isLeader\":true,\"identity\":\"me\",\"holderIdentity\":\"me\","
          + "\"fencingToken\":9,\"observed\":true,\"validFor\":\"10s\"}")
          .getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try {
      BatonHttpClient c = BatonHttpClient.builder()
          .address("127.0.0.1:" + server.getAddress().getPort()).clientId("http-1").build();
      assertEquals(9, c.requireLeader(Duration.ofMillis(500)));
      assertEquals(9, c.requireLeader(Duration.ofNanos(1))); // rounded up to the millisecond
      c.leadership();
      c.isLeader();
      assertEquals(java.util.List.of("client_id=http-1&max_valid_for=1500ms",
          "client_id=http-1&max_valid_for=1001ms", "client_id=http-1", "client_id=http-1"),
          queries);
    } finally {
      server.stop(0);
    }
  }

  @Test
  void waitUntilLeaderTimesOutNamingTheLastError() throws Exception {
    try (BatonClient c = BatonClient.builder().address("127.0.0.1:1").build()) {
      TimeoutException e = assertThrows(TimeoutException.class,
          () -> c.waitUntilLeader(Duration.ofSeconds(2)));
      assertTrue(e.getMessage().contains("no sidecar answering at 127.0.0.1:1"), e.getMessage());
    }
  }

  @Test
  void interruptingAWaitStopsIt() throws Exception {
    try (FakeSidecar fake = new FakeSidecar(); BatonClient c = fake.client().build()) {
      Thread waiter = new Thread(() -> {
        try {
          c.waitUntilLeader();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      waiter.start();
      ServerCallStreamObserver<?> stream = (ServerCallStreamObserver<?>) fake.nextStream();
      waiter.interrupt();
      waiter.join(5000);
      assertTrue(!waiter.isAlive(), "waitUntilLeader did not return on interrupt");
      for (int i = 0; i < 100 && !stream.isCancelled(); i++) {
        Thread.sleep(10);
      }
      assertTrue(stream.isCancelled(), "the wait's watch stream is still open");
    }
  }

  @Test
  void cancellingAWaitStopsIt() {
    try (BatonClient c = BatonClient.builder().address("127.0.0.1:1").build()) {
      CompletableFuture<Leadership> f = c.waitUntilLeaderAsync();
      f.cancel(true);
      assertThrows(CancellationException.class, f::join);
    }
  }
}

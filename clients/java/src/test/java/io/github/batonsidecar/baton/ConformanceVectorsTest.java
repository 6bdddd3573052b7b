package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import baton.v1.LeaderElectionOuterClass;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.protobuf.InvalidProtocolBufferException;
import com.sun.net.httpserver.HttpServer;
import io.grpc.Status;
import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The vector scenarios of clients/conformance: each test checks every case of one vector file
 * (each failure names its case) and then reports the scenario as passed.
 */
class ConformanceVectorsTest {
  private static Duration ms(JsonObject o, String key) {
    return Duration.ofMillis(o.get(key).getAsLong());
  }

  private static List<JsonObject> cases(JsonObject file, String list) {
    List<JsonObject> out = new ArrayList<>();
    file.getAsJsonArray(list).forEach(e -> out.add(e.getAsJsonObject()));
    return out;
  }

  /** A Leadership in the vector files' terms (see the README's table). */
  private static Map<String, Object> describe(Leadership l) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("isLeader", l.isLeader());
    m.put("identity", l.identity());
    m.put("holderIdentity", l.holderIdentity());
    m.put("fencingToken", (long) l.fencingToken());
    m.put("fencingRevision", l.fencingRevision().toString());
    m.put("leaseName", l.leaseName());
    m.put("leaseNamespace", l.leaseNamespace());
    m.put("leaseUid", l.leaseUid());
    m.put("acquireTimeUnixMs", l.acquireTime().map(Instant::toEpochMilli).orElse(null));
    m.put("renewTimeUnixMs", l.renewTime().map(Instant::toEpochMilli).orElse(null));
    m.put("validForMs", l.validFor().toMillis());
    m.put("validUntilBoottimeMs", l.validUntilBoottime().toMillis());
    m.put("leaseDurationMs", l.leaseDuration().toMillis());
    m.put("observed", l.observed());
    m.put("steppingDown", l.steppingDown());
    return m;
  }

  /** The expected Leadership of a case, in describe()'s terms. */
  private static Map<String, Object> expected(JsonObject expect) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (Map.Entry<String, JsonElement> e : expect.entrySet()) {
      JsonElement v = e.getValue();
      Object value;
      if (v.isJsonNull()) {
        value = null;
      } else if (v.getAsJsonPrimitive().isBoolean()) {
        value = v.getAsBoolean();
      } else if (v.getAsJsonPrimitive().isNumber()) {
        value = v.getAsLong();
      } else {
        value = v.getAsString();
      }
      m.put(e.getKey(), value);
    }
    return m;
  }

  /** Checks one Leadership case: {@code convert} must give the expected state or refuse. */
  private static Executable leadershipCase(JsonObject c, Conversion convert) {
    String name = c.get("name").getAsString();
    JsonObject expect = c.getAsJsonObject("expect");
    return () -> {
      if (expect.has("error")) {
        BatonException e = assertThrows(BatonException.class, convert::run, name);
        assertFalse(e instanceof SidecarUnavailableException, name);
        return;
      }
      assertEquals(expected(expect), describe(convert.run()), name);
    };
  }

  private interface Conversion {
    Leadership run();
  }

  @Test
  void leadershipJson() {
    List<Executable> checks = new ArrayList<>();
    for (JsonObject c : cases(Conformance.vectors("vectors/leadership_json.json"), "cases")) {
      checks.add(leadershipCase(c,
          () -> Leadership.fromJson(c.get("text").getAsString(), ms(c, "sinceMs"))));
    }
    assertAll("leadership_json.json", checks);
    Conformance.passed("leadership-json");
  }

  /**
   * The proto cases decode as the client's gRPC stub does (the generated parser); a message it
   * cannot parse fails the call with a BatonException, as here.
   */
  @Test
  void leadershipProto() {
    List<Executable> checks = new ArrayList<>();
    for (JsonObject c : cases(Conformance.vectors("vectors/leadership_proto.json"), "cases")) {
      checks.add(leadershipCase(c, () -> {
        byte[] bytes = Base64.getDecoder().decode(c.get("base64").getAsString());
        try {
          return Leadership.fromProto(LeaderElectionOuterClass.Leadership.parseFrom(bytes),
              ms(c, "sinceMs"));
        } catch (InvalidProtocolBufferException e) {
          throw new BatonException("baton: not a Leadership message", e);
        }
      }));
    }
    assertAll("leadership_proto.json", checks);
    Conformance.passed("leadership-proto");
  }

  @Test
  void validity() {
    List<Executable> checks = new ArrayList<>();
    for (JsonObject c : cases(Conformance.vectors("vectors/validity.json"), "cases")) {
      Leadership l = Leadership.fromJson(c.get("text").getAsString(), ms(c, "sinceMs"));
      for (JsonElement check : c.getAsJsonArray("checks")) {
        JsonObject at = check.getAsJsonObject();
        checks.add(() -> assertEquals(at.get("remainingMs").getAsLong(),
            l.remainingAt(ms(at, "nowMs")).toMillis(),
            c.get("name").getAsString() + " at " + at.get("nowMs")));
      }
    }
    assertAll("validity.json", checks);
    Conformance.passed("validity");
  }

  @Test
  void requireLeader() {
    List<Executable> checks = new ArrayList<>();
    for (JsonObject c : cases(Conformance.vectors("vectors/require_leader.json"), "cases")) {
      String name = c.get("name").getAsString();
      JsonObject expect = c.getAsJsonObject("expect");
      checks.add(() -> {
        Leadership l = Leadership.fromJson(c.get("text").getAsString(), ms(c, "sinceMs"));
        Duration now = ms(c, "nowMs");
        Duration min = ms(c, "minValidityMs");
        assertEquals(ms(c, "requestMaxValidForMs"), BatonClient.requireLeaderBound(min),
            name + ": max_valid_for");
        if (expect.has("notLeader")) {
          assertThrows(NotLeaderException.class, () -> BatonClient.requireValidity(l, min, now),
              name);
          return;
        }
        Leadership granted = BatonClient.requireValidity(l, min, now);
        assertEquals(expect.get("token").getAsInt(), granted.fencingToken(), name);
        assertEquals(expect.get("revision").getAsString(), granted.fencingRevision().toString(),
            name);
      });
    }
    assertAll("require_leader.json", checks);
    Conformance.passed("require-leader");
  }

  @Test
  void fence() {
    List<Executable> checks = new ArrayList<>();
    for (JsonObject c : cases(Conformance.vectors("vectors/fence.json"), "cases")) {
      String name = c.get("name").getAsString();
      boolean tokens = c.get("kind").getAsString().equals("token");
      checks.add(() -> {
        Fence fence = new Fence();
        RevisionFence revisions = new RevisionFence();
        int step = 0;
        for (JsonElement s : c.getAsJsonArray("steps")) {
          JsonObject st = s.getAsJsonObject();
          String where = name + " step " + step++;
          Executable admit = tokens
              ? () -> fence.admit(st.get("admit").getAsInt())
              : () -> revisions.admit(new BigInteger(st.get("admit").getAsString()));
          if (st.get("ok").getAsBoolean()) {
            admit.execute();
          } else {
            Class<? extends BatonException> stale =
                tokens ? StaleTokenException.class : StaleRevisionException.class;
            assertThrows(stale, admit, where);
          }
          Object highest = tokens ? (Object) fence.highest().getAsInt()
              : revisions.highest().orElseThrow().toString();
          Object want = tokens ? (Object) st.get("highest").getAsInt()
              : st.get("highest").getAsString();
          assertEquals(want, highest, where);
        }
      });
    }
    assertAll("fence.json", checks);
    Conformance.passed("fence");
  }

  @Test
  void fenceHeaders() {
    JsonObject file = Conformance.vectors("vectors/fence_headers.json");
    List<Executable> checks = new ArrayList<>();
    checks.add(() -> assertEquals(file.get("tokenHeader").getAsString(), FencingHeaders.TOKEN));
    checks.add(() -> assertEquals(file.get("revisionHeader").getAsString(),
        FencingHeaders.REVISION));
    for (JsonObject c : cases(file, "cases")) {
      String name = c.get("name").getAsString();
      boolean tokens = c.get("kind").getAsString().equals("token");
      JsonElement expect = c.get("expect");
      checks.add(() -> {
        if (c.has("format")) {
          String text = tokens ? FencingHeaders.formatToken(c.get("format").getAsInt())
              : FencingHeaders.formatRevision(new BigInteger(c.get("format").getAsString()));
          assertEquals(expect.getAsString(), text, name);
          return;
        }
        String header = c.get("header").isJsonNull() ? null : c.get("header").getAsString();
        Executable parse = tokens ? () -> FencingHeaders.parseToken(header)
            : () -> FencingHeaders.parseRevision(header);
        if (expect.isJsonPrimitive() && expect.getAsString().equals("error")) {
          assertThrows(BatonException.class, parse, name);
        } else if (tokens) {
          assertEquals(expect.getAsInt(), FencingHeaders.parseToken(header), name);
        } else {
          assertEquals(expect.getAsString(), FencingHeaders.parseRevision(header).toString(), name);
        }
      });
    }
    assertAll("fence_headers.json", checks);
    Conformance.passed("fence-headers");
  }

  @Test
  void errors() {
    JsonObject file = Conformance.vectors("vectors/errors.json");
    List<Executable> checks = new ArrayList<>();
    for (JsonObject c : cases(file, "grpc")) {
      String code = c.get("code").getAsString();
      boolean unavailable = c.get("error").getAsString().equals("unavailable");
      checks.add(() -> {
        Status status = Status.fromCode(Status.Code.valueOf(code)).withDescription("test");
        BatonException e = Errors.translate("127.0.0.1:1", status.asRuntimeException());
        assertEquals(unavailable, e instanceof SidecarUnavailableException, code);
        assertEquals(Optional.of(status.getCode()),
            Optional.ofNullable(e.status()).map(Status::getCode), code);
      });
    }
    for (JsonObject c : cases(file, "http")) {
      String name = c.get("name").getAsString();
      boolean unavailable = c.get("error").getAsString().equals("unavailable");
      JsonElement outcome = c.get("outcome");
      checks.add(() -> {
        BatonException e = httpFailure(outcome);
        assertEquals(unavailable, e instanceof SidecarUnavailableException, name + ": " + e);
        if (outcome.getAsJsonPrimitive().isNumber()) {
          assertEquals(outcome.getAsInt(), e.httpStatus(), name + ": " + e);
        }
      });
    }
    assertAll("errors.json", checks);
    Conformance.passed("errors");
  }

  /**
   * What BatonHttpClient makes of an HTTP outcome, for real: a port nobody listens on
   * ("refused"), a server that accepts but never answers ("timeout"), or one that answers with
   * the status.
   */
  private static BatonException httpFailure(JsonElement outcome) throws IOException {
    if (outcome.getAsJsonPrimitive().isNumber()) {
      int status = outcome.getAsInt();
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.createContext("/", ex -> {
        byte[] body = "no\n".getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, body.length);
        ex.getResponseBody().write(body);
        ex.close();
      });
      server.start();
      try {
        return leadershipFailure("127.0.0.1:" + server.getAddress().getPort());
      } finally {
        server.stop(0);
      }
    }
    if (outcome.getAsString().equals("timeout")) {
      try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        return leadershipFailure("127.0.0.1:" + silent.getLocalPort());
      }
    }
    int port;
    try (ServerSocket closed = new ServerSocket(0)) {
      port = closed.getLocalPort();
    }
    return leadershipFailure("127.0.0.1:" + port);
  }

  private static BatonException leadershipFailure(String address) {
    BatonHttpClient c = BatonHttpClient.builder().address(address)
        .timeout(Duration.ofMillis(300)).build();
    return assertThrows(BatonException.class, c::leadership, address);
  }
}

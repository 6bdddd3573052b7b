package io.github.batonsidecar.baton;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The real sidecars of clients/testing/sidecars, as described by $BATON_SIDECARS
 * (sidecars.json). Tests only read that file and send signals; the fixture restarts a sidecar
 * that exits, on the same ports with a new identity.
 */
final class Sidecars {
  /** One sidecar as sidecars.json describes it when read. */
  record Sidecar(int index, String identity, String grpc, String http, long pid) {}

  final Path file;
  final String namespace;
  final String leaseName;
  final Duration leaseDuration;
  final Duration renewDeadline;

  private Sidecars(Path file) {
    this.file = file;
    JsonObject o = read(file);
    namespace = o.get("namespace").getAsString();
    leaseName = o.get("leaseName").getAsString();
    leaseDuration = Duration.ofMillis((long) (o.get("leaseDuration").getAsDouble() * 1000));
    renewDeadline = Duration.ofMillis((long) (o.get("renewDeadline").getAsDouble() * 1000));
  }

  /** The fixture, after waiting until every sidecar answers and one leads; skips without it. */
  static Sidecars require() {
    String path = System.getenv("BATON_SIDECARS");
    assumeTrue(path != null && !path.isEmpty(), "BATON_SIDECARS is not set: no sidecars to test");
    Sidecars s = new Sidecars(Path.of(path));
    s.awaitReady();
    return s;
  }

  private static JsonObject read(Path file) {
    try {
      return JsonParser.parseString(Files.readString(file)).getAsJsonObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The sidecars as the file says now (pids and identities change with restarts). */
  List<Sidecar> list() {
    List<Sidecar> out = new ArrayList<>();
    for (JsonElement e : read(file).getAsJsonArray("sidecars")) {
      JsonObject s = e.getAsJsonObject();
      out.add(new Sidecar(s.get("index").getAsInt(), s.get("identity").getAsString(),
          s.get("grpc").getAsString(), s.get("http").getAsString(), s.get("pid").isJsonNull() ? 0 : s.get("pid").getAsLong()));
    }
    return out;
  }

  Sidecar get(int index) {
    return list().get(index);
  }

  /** A client of sidecar {@code index} that expects the fixture's Lease. */
  BatonClient client(int index) {
    return BatonClient.builder().address(get(index).grpc())
        .expectLease(namespace, leaseName).build();
  }

  /** Sends {@code signal} (STOP, CONT, TERM, KILL) to sidecar {@code index}. */
  void signal(int index, String signal) {
    long pid = get(index).pid();
    if (pid == 0) {
      throw new IllegalStateException("sidecar " + index + " is restarting");
    }
    run("kill", "-" + signal, Long.toString(pid));
  }

  /** Blocks until every sidecar answers and exactly one leads (the fixture's `wait`). */
  void awaitReady() {
    Path script = Conformance.dir().resolve("../testing/sidecars");
    run(script.toString(), "wait", file.getParent().toString());
  }

  /**
   * Waits until the anonymous answers {@link #awaitReady} got (the fixture's {@code wait} asks
   * {@code GET /leader} without a client_id) have lapsed: the leader holds such a promise until
   * its deadline, at most a renew deadline later, and a step-down waits for it. A test that
   * measures how fast an acknowledged step-down hands over must not count that wait.
   */
  void awaitAnonymousPromisesLapsed() throws InterruptedException {
    Thread.sleep(renewDeadline.plusMillis(100).toMillis());
  }

  /** The index of the sidecar that leads now, asking each; -1 if none does. */
  int leader() {
    for (Sidecar s : list()) {
      try (BatonClient c = BatonClient.builder().address(s.grpc()).build()) {
        if (c.isLeader()) {
          return s.index();
        }
      } catch (BatonException e) {
        // not answering: not the leader
      }
    }
    return -1;
  }

  private static void run(String... command) {
    try {
      Process p = new ProcessBuilder(command).inheritIO().start();
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

package io.github.batonsidecar.baton.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.github.batonsidecar.baton.BatonClient;
import io.github.batonsidecar.baton.BatonException;
import io.github.batonsidecar.baton.Fence;
import io.github.batonsidecar.baton.FencingHeaders;
import io.github.batonsidecar.baton.Leadership;
import io.github.batonsidecar.baton.NotLeaderException;
import io.github.batonsidecar.baton.SidecarUnavailableException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * Fenced writes end to end: a toy key-value store that refuses stale fencing tokens, and a writer
 * that writes only while its baton sidecar says this pod leads, tagging every write with the
 * token.
 *
 * <pre>
 * FencedWrites store  --listen 127.0.0.1:7070
 * FencedWrites writer --store http://127.0.0.1:7070 [--key counter] [--every-ms 1000]
 * FencedWrites demo   --listen 127.0.0.1:7070 SIDECAR...
 * </pre>
 *
 * <p>Run one store and one writer beside each sidecar ({@code BATON_GRPC_ADDR} selects the
 * sidecar). Only the leader's writer writes: it writes inside {@code runWhileLeader}, which stops
 * the writes when the term ends and then acknowledges the step-down, so a graceful handover takes
 * milliseconds. After a handover the new leader's writes carry a higher token, and a late write
 * from the old leader is answered 409 Conflict. {@code demo} runs the store and one writer per
 * sidecar address in one JVM, to try it with one command.
 */
public final class FencedWrites {
  private FencedWrites() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = new HashMap<>();
    List<String> rest = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      if (args[i].startsWith("--") && i + 1 < args.length) {
        flags.put(args[i].substring(2), args[++i]);
      } else {
        rest.add(args[i]);
      }
    }
    String listen = flags.getOrDefault("listen", "127.0.0.1:7070");
    String key = flags.getOrDefault("key", "counter");
    Duration every = Duration.ofMillis(Long.parseLong(flags.getOrDefault("every-ms", "1000")));
    Duration minValidity =
        Duration.ofMillis(Long.parseLong(flags.getOrDefault("min-validity-ms", "500")));
    switch (args.length > 0 ? args[0] : "") {
      case "store" -> runStore(listen);
      case "writer" -> {
        stopOnShutdown(List.of(Thread.currentThread()));
        runWriter(BatonClient.create(), // $BATON_GRPC_ADDR or 127.0.0.1:4041
            flags.getOrDefault("store", "http://127.0.0.1:7070"), key, every, minValidity);
      }
      case "demo" -> {
        runStore(listen);
        List<Thread> writers = new ArrayList<>();
        for (String sidecar : rest) {
          Thread t = new Thread(() -> {
            try {
              runWriter(BatonClient.builder().address(sidecar).build(), "http://" + listen, key,
                  every, minValidity);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }, "writer " + sidecar);
          t.start();
          writers.add(t);
        }
        stopOnShutdown(writers);
        for (Thread t : writers) {
          t.join();
        }
      }
      default -> {
        System.err.println("usage: FencedWrites store|writer [--flag value]...");
        System.exit(2);
      }
    }
  }

  private static void log(String message) {
    System.out.println(LocalTime.now() + " " + message);
  }

  // --- the store ---------------------------------------------------------------------------------

  /**
   * The toy store. Its lock covers the fence check and the write together, so no stale write can
   * slip in between.
   */
  private static final class Store {
    private final Fence fence = new Fence();
    private final Map<String, String> data = new HashMap<>(); // guarded by this

    void handle(HttpExchange ex) throws IOException {
      String key = ex.getRequestURI().getPath().replaceFirst("^/kv/", "");
      switch (ex.getRequestMethod()) {
        case "GET" -> {
          String value;
          synchronized (this) {
            value = data.get(key);
          }
          reply(ex, value != null ? 200 : 404, value != null ? value : "no such key");
        }
        case "PUT" -> {
          String value = new String(ex.getRequestBody().readNBytes(1 << 16),
              StandardCharsets.UTF_8);
          int token;
          try {
            token = FencingHeaders.parseToken(
                ex.getRequestHeaders().getFirst(FencingHeaders.TOKEN));
          } catch (BatonException e) {
            reply(ex, 400, e.getMessage());
            return;
          }
          synchronized (this) {
            try {
              fence.admit(token);
            } catch (BatonException stale) {
              log("refused " + key + "=\"" + value + "\": " + stale.getMessage());
              reply(ex, 409, stale.getMessage());
              return;
            }
            data.put(key, value);
          }
          log("wrote " + key + "=\"" + value + "\" with token " + token);
          reply(ex, 200, "ok");
        }
        default -> reply(ex, 405, "GET or PUT");
      }
    }

    private static void reply(HttpExchange ex, int status, String body) throws IOException {
      byte[] b = (body + "\n").getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(status, b.length);
      ex.getResponseBody().write(b);
      ex.close();
    }
  }

  private static void runStore(String listen) throws IOException {
    int colon = listen.lastIndexOf(':');
    HttpServer server = HttpServer.create(new InetSocketAddress(
        listen.substring(0, colon), Integer.parseInt(listen.substring(colon + 1))), 0);
    Store store = new Store();
    server.createContext("/kv/", store::handle);
    server.start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> server.stop(0)));
    log("toy store on " + listen);
  }

  // --- the writer --------------------------------------------------------------------------------

  /** On SIGTERM: interrupts the writers, which end their leader work and acknowledge. */
  private static void stopOnShutdown(List<Thread> writers) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      writers.forEach(Thread::interrupt);
      for (Thread t : writers) {
        try {
          t.join(5000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }));
  }

  /**
   * One writer: writes once every {@code every} while its sidecar says this pod leads, until its
   * thread is interrupted (then the running term is ended and acknowledged).
   */
  private static void runWriter(BatonClient client, String storeUrl, String key, Duration every,
      Duration minValidity) throws InterruptedException {
    HttpClient http = HttpClient.newHttpClient();
    URI uri = URI.create(storeUrl + "/kv/" + key);
    String me = "writer of " + client.address();
    int[] n = {0};
    try (BatonClient baton = client) {
      log(me + ": waiting for leadership");
      baton.runWhileLeader((Leadership term) -> {
        log(me + ": leading with token " + term.fencingToken() + " (revision "
            + term.fencingRevision() + ")");
        try {
          while (true) {
            try {
              // Ask right before each write, for as long as the write may take.
              int token = baton.requireLeader(minValidity);
              n[0]++;
              put(http, uri, me + " #" + n[0], token, minValidity);
              log(me + ": write " + n[0] + " done");
            } catch (NotLeaderException | SidecarUnavailableException e) {
              log(me + ": not writing: " + e.getMessage());
            } catch (IOException e) {
              log(me + ": write " + n[0] + " failed: " + e.getMessage());
            }
            Thread.sleep(every.toMillis());
          }
        } catch (InterruptedException e) {
          log(me + ": term with token " + term.fencingToken() + " ended: stopped writing");
        }
      });
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } catch (InterruptedException e) {
      log(me + ": stopped; the step-down is acknowledged");
    }
  }

  /**
   * One fenced write: the token travels in the Baton-Fencing-Token header, and the request may
   * take no longer than the leadership it was granted.
   */
  private static void put(HttpClient http, URI uri, String value, int token, Duration timeout)
      throws IOException, InterruptedException {
    HttpRequest req = FencingHeaders.withToken(HttpRequest.newBuilder(uri), token)
        .timeout(timeout)
        .PUT(HttpRequest.BodyPublishers.ofString(value))
        .build();
    HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
    if (resp.statusCode() != 200) {
      throw new IOException("store: " + resp.statusCode() + ": " + resp.body().strip());
    }
  }
}

package io.github.batonsidecar.baton;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The language-neutral conformance suite in clients/conformance: its vector files, and the report
 * that {@code clients/conformance/check} compares with scenarios.json.
 */
final class Conformance {
  private Conformance() {}

  /** clients/conformance (the build passes it as a system property). */
  static Path dir() {
    return Path.of(System.getProperty("baton.conformance.dir", "../conformance"));
  }

  /** A vector file, by its path relative to clients/conformance. */
  static JsonObject vectors(String path) {
    try {
      return JsonParser.parseString(Files.readString(dir().resolve(path))).getAsJsonObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Records that every check of scenario {@code id} passed: appends the id to
   * $BATON_CONFORMANCE_REPORT, if set. Call it after the scenario's last assertion.
   */
  static void passed(String id) {
    String report = System.getenv("BATON_CONFORMANCE_REPORT");
    if (report == null || report.isEmpty()) {
      return;
    }
    try {
      Files.writeString(Path.of(report), id + "\n", StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice serve} as a real process: banner, a request, SIGTERM and a graceful stop; and its startup errors. */
class ServeProcessTest {
  private static final Pattern LISTENING = Pattern.compile("sluice: listening on (http://127\\.0\\.0\\.1:\\d+)");

  @TempDir Path dir;

  @Test void servesThenStopsGracefullyOnSigterm() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "dev.sluice.server.SluiceCli",
        "serve", "--config", config.toString(), "--port", "0", "--shutdown-timeout", "5s")
        .redirectErrorStream(true).redirectOutput(dir.resolve("child.out").toFile()).start();
    List<String> lines = new CopyOnWriteArrayList<>();
    try {
      URI base = null;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (base == null && System.nanoTime() < deadline && p.isAlive()) {
        lines.clear();
        lines.addAll(Files.readAllLines(dir.resolve("child.out")));
        for (String line : lines) {
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            base = URI.create(m.group(1));
          }
        }
        Thread.sleep(20); // polling the child's output, not waiting for time to pass
      }
      assertThat(base).as("banner in %s", lines).isNotNull();
      assertThat(String.join("\n", lines))
          .contains("sluice: 3 policies from " + config + " (login fixed-window, api token-bucket, search gcra)")
          .contains("curl -si -X POST " + base + "/v1/acquire -H 'Content-Type: application/json' -d '{\"policy\":\"login\",\"key\":\"alice\"}'");

      Http http = new Http(base);
      assertThat(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"alice\"}").statusCode()).isEqualTo(200);

      // SIGTERM through the handle: Process.destroy() would also close our end of the child's streams.
      p.toHandle().destroy();
      assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("stopped within 30 s").isTrue();
      lines.clear();
      lines.addAll(Files.readAllLines(dir.resolve("child.out")));
      assertThat(p.exitValue()).isEqualTo(143); // 128 + SIGTERM, after the shutdown hook ran
      assertThat(lines).contains("sluice: stopping (draining requests in flight for up to 5s)");
      assertThat(lines.get(lines.size() - 1)).matches("sluice: stopped after \\d+ ms");
    } finally {
      p.destroyForcibly();
    }
  }

  @Test void startupErrorsExitWith2AndAClearMessage() throws Exception {
    assertThat(runErr("serve", "--config", dir.resolve("missing.yaml").toString()))
        .isEqualTo("sluice: policy file " + dir.resolve("missing.yaml") + " does not exist");
    Path config = dir.resolve("p.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    assertThat(runErr("serve", "--config", config.toString(), "--port", "70000"))
        .isEqualTo("sluice: --port 70000 is out of range; use 0 (a free port) to 65535");
    assertThat(runErr("serve", "--config", config.toString(), "--redis", "redis://127.0.0.1:6379", "--postgres", "jdbc:postgresql://x/y"))
        .isEqualTo("sluice: --redis and --postgres both given; choose one store");
    assertThat(runErr("serve", "--config", config.toString(), "--shutdown-timeout", "soon"))
        .startsWith("sluice: --shutdown-timeout 'soon' is not a duration");
  }

  static String runErr(String... args) {
    StringWriter err = new StringWriter();
    int code = SluiceCli.run(new PrintWriter(new StringWriter()), new PrintWriter(err, true), args);
    assertThat(code).as(err.toString()).isEqualTo(2);
    return err.toString().strip();
  }
}

package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice serve} as a real process: banner, a request, SIGTERM or SIGINT, a graceful stop and exit 0; and its startup errors. */
class ServeProcessTest {
  @TempDir Path dir;

  @Test void servesThenStopsGracefullyOnSigterm() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--shutdown-timeout", "5s")) {
      assertThat(String.join("\n", p.lines()))
          .contains("sluice: 3 policies from " + config + " (login fixed-window, api token-bucket, search gcra)")
          .contains("curl -si -X POST " + p.base + "/v1/acquire -H 'Content-Type: application/json' -d '{\"policy\":\"login\",\"key\":\"alice\"}'");

      Http http = new Http(p.base);
      assertThat(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"alice\"}").statusCode()).isEqualTo(200);

      p.signal("TERM");
      assertThat(p.exitStatus()).as("exit status after a clean drain, %s", p.lines()).isZero();
      List<String> lines = p.lines();
      assertThat(lines).contains("sluice: stopping (draining requests in flight for up to 5s)");
      assertThat(lines.get(lines.size() - 1)).matches("sluice: stopped after \\d+ ms");
    }
  }

  /** Issue 17.1: SIGTERM exited 143 and SIGINT 130 (the JVM's 128 + signal), where a clean stop promises 0. */
  @Test void sigintAfterACleanDrainExits0NotThe130OfTheJvm() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0")) {
      p.signal("INT");
      assertThat(p.exitStatus()).as("%s", p.lines()).isZero();
      assertThat(p.lines()).anyMatch(l -> l.matches("sluice: stopped after \\d+ ms"));
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

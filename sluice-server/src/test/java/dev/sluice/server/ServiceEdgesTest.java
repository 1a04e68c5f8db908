package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Policy;
import dev.sluice.Ticker;
import dev.sluice.kernel.Store;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 27, finding 8: the small things found on the way, one test each, through a real server or process. */
class ServiceEdgesTest {
  @TempDir Path dir;
  private SluiceServer server;
  private Http http;

  @BeforeEach void start() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    List<Policy> policies = PolicyFile.read(config);
    server = new SluiceServer(policies, Store.memory(1000, Ticker.system()), "127.0.0.1", 0, Duration.ofSeconds(5), Ticker.system(), 100)
        .admin("127.0.0.1", 0, "s3cret-token", config).start();
    http = new Http(server.uri());
  }

  @AfterEach void stop() throws Exception {
    server.stop();
  }

  private HttpResponse<String> postBytes(String path, byte[] body) {
    return http.send(HttpRequest.newBuilder(server.uri().resolve(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  private static byte[] concat(String before, int[] bytes, String after) {
    byte[] a = before.getBytes(StandardCharsets.UTF_8);
    byte[] c = after.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[a.length + bytes.length + c.length];
    System.arraycopy(a, 0, out, 0, a.length);
    for (int i = 0; i < bytes.length; i++) {
      out[a.length + i] = (byte) bytes[i];
    }
    System.arraycopy(c, 0, out, a.length + bytes.length, c.length);
    return out;
  }

  /** A key sent as overlong UTF-8 (C0 80) was accepted as NUL and shared the real NUL key's budget. */
  @Test void overlongOrMalformedUtf8InAJsonBodyIsRefusedNamingTheRule() {
    String head = "{\"policy\":\"login\",\"key\":\"";
    for (int[] bad : new int[][] {{0xC0, 0x80}, {0xE0, 0x80, 0x80}, {0xED, 0xA0, 0x80}, {0xFF}, {0xE2, 0x82}, {0x80}}) {
      HttpResponse<String> r = postBytes("/v1/acquire", concat(head, bad, "\"}"));
      assertThat(r.statusCode()).as("%s", java.util.Arrays.toString(bad)).isEqualTo(400);
      assertThat(ServerApiTest.json(r).get("message").textValue()).as("%s", java.util.Arrays.toString(bad))
          .startsWith("request body is not valid UTF-8: bytes " + String.format("%02X", bad[0]))
          .contains("at offset " + head.length())
          .endsWith("are not a well-formed UTF-8 sequence (overlong forms, surrogates and truncated sequences are refused);"
              + " send JSON as UTF-8");
    }
    // Well-formed UTF-8, and the NUL key itself (escaped, as JSON requires), still work.
    assertThat(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"caf\u00e9 \uD83D\uDE00\"}").statusCode()).isEqualTo(200);
    assertThat(http.post("/v1/acquire", "{\"policy\":\"login\",\"key\":\"\\u0000\"}").statusCode()).isEqualTo(200);
  }

  /** {@code actual} 2^64 said "not a whole number"; it is one, too large. */
  @Test void settleWithAnActualOf2To64IsTooLargeNotNotAWholeNumber() {
    String ticket = ServerApiTest.json(http.post("/v1/acquire", "{\"policy\":\"api\",\"key\":\"big\",\"permits\":2}"))
        .get("ticket").textValue();
    HttpResponse<String> r = http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":18446744073709551616}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(ServerApiTest.json(r).get("message").textValue()).isEqualTo("actual permits 18446744073709551616 exceeds 10,"
        + " the most policy 'api' can ever grant at once; a settlement charges at most one limit's worth, so settle at most 10"
        + " (or split the cost over more reservations)");
    HttpResponse<String> negative = http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":-18446744073709551616}");
    assertThat(ServerApiTest.json(negative).get("message").textValue()).startsWith("actual permits -18446744073709551616 is below 0");
    assertThat(ServerApiTest.json(http.post("/v1/settle", "{\"ticket\":\"" + ticket + "\",\"actual\":1.5}")).get("message")
        .textValue()).startsWith("actual 1.5 is not a whole number");
  }

  /** {@code Authorization: bearer ...} was refused: the scheme is case-insensitive (RFC 9110). */
  @Test void theAdminApisBearerSchemeIsCaseInsensitive() {
    URI admin = URI.create("http://127.0.0.1:" + server.adminPort() + "/admin/policies");
    for (String scheme : List.of("Bearer", "bearer", "BEARER", "bEaReR")) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(admin).header("Authorization", scheme + " s3cret-token").GET());
      assertThat(r.statusCode()).as(scheme).isEqualTo(200);
    }
    for (String wrong : List.of("Basic s3cret-token", "bearer s3cret-tokeN", "s3cret-token", "Bearers3cret-token")) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(admin).header("Authorization", wrong).GET());
      assertThat(r.statusCode()).as(wrong).isEqualTo(401);
    }
  }

  /** A bad YAML policy file's message had no line number. */
  @Test void aPolicyFileThatIsNotYamlSaysTheLineAndColumn() throws Exception {
    Path bad = dir.resolve("bad.yaml");
    Files.writeString(bad, "policies:\n  - name: login\n    algorithm: fixed-window\n   limit: 5\n    window: 1m\n");
    assertThatThrownBy(() -> PolicyFile.read(bad)).hasMessageStartingWith("policy file " + bad + " is not valid YAML (line 4, column ");
    assertThatThrownBy(() -> PolicyFile.parse("policies:\n  - name: [a\n", "inline"))
        .hasMessageStartingWith("inline is not valid YAML (line ");
  }

  /** {@code --failure-mode maybe} and {@code --envoy-headers weird} were accepted when nothing used them. */
  @Test void everyFlagIsCheckedWhetherOrNotAnythingUsesIt() throws Exception {
    String config = dir.resolve("policies.yaml").toString();
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--failure-mode", "maybe"))
        .isEqualTo("sluice: --failure-mode 'maybe' is unknown; use closed, open or fallback");
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--envoy-headers", "weird"))
        .isEqualTo("sluice: --envoy-headers 'weird' is unknown; use ietf, legacy, all or none");
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--store-timeout", "0ms"))
        .isEqualTo("sluice: --store-timeout 0ms is under 1 ms; give the store at least 1ms");
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--sweep-interval", "soon"))
        .startsWith("sluice: --sweep-interval 'soon' is not a duration");
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--redis", "redis://127.0.0.1:7187", "--max-keys", "0"))
        .isEqualTo("sluice: --max-keys 0 is not positive; it must be at least 1");
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--body-timeout", "0s"))
        .isEqualTo("sluice: --body-timeout 0s is under 1 ms; give a request body at least 1ms to arrive");
    assertThat(ServeProcessTest.runErr("serve", "--config", config, "--body-timeout", "2m"))
        .isEqualTo("sluice: --body-timeout 2m is over 1 minute, the most it may be; a body of at most 64 KiB needs seconds,"
            + " and every second is one a slow client can hold");
  }

  /** {@code --host 0.0.0.0} bound every address, but the banner said 127.0.0.1. */
  @Test void theBannerSaysAWildcardHostWasBoundAsSuch() throws Exception {
    try (ServeProcess p = ServeProcess.start(dir, "--config", dir.resolve("policies.yaml").toString(), "--port", "0",
        "--host", "0.0.0.0")) {
      int port = p.base.getPort();
      assertThat(p.lines()).contains("sluice: listening on 0.0.0.0:" + port + " (every address of this host), e.g. http://127.0.0.1:"
          + port);
      assertThat(new Http(p.base).get("/healthz").statusCode()).isEqualTo(200);
    }
  }

  /** Under nohup (SIGHUP ignored at start) a reload by signal silently did nothing; the banner says so now. */
  @Test void underNohupTheBannerSaysReloadBySignalIsOff() throws Exception {
    String line = "sluice: reload by signal is off: SIGHUP was ignored when the service started (as under nohup);"
        + " reload with --watch or the admin API's POST /admin/reload";
    try (ServeProcess p = ServeProcess.start(dir, List.of("nohup"), "--config", dir.resolve("policies.yaml").toString(), "--port", "0")) {
      assertThat(p.lines()).contains(line);
      p.signal("HUP");
      assertThat(new Http(p.base).get("/healthz").statusCode()).as("still serving after SIGHUP").isEqualTo(200);
    }
    try (ServeProcess p = ServeProcess.start(dir, "--config", dir.resolve("policies.yaml").toString(), "--port", "0")) {
      assertThat(p.lines()).doesNotContain(line);
    }
  }
}

package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.kernel.Inputs;
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

  /**
   * Issue 17.2: during the drain a request on an open keep-alive connection got 503
   * {"error":"unavailable"}. It is served now, and its answer closes the connection; a request in
   * flight finishes; no new connection is accepted; the process exits 0.
   */
  @Test void drainServesKeepAliveRequestsWithConnectionCloseInsteadOf503() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    try (ServeProcess p = ServeProcess.start(dir, "--config", config.toString(), "--port", "0", "--shutdown-timeout", "20s");
         RawConnection idle = new RawConnection(p.base.getPort());
         RawConnection slow = new RawConnection(p.base.getPort())) {
      String body = "{\"policy\":\"api\",\"key\":\"drain\"}"; // a bucket of 10: four requests fit
      // Both connections accepted and kept alive: each has had one answer without Connection: close.
      assertThat(slow.exchange(body)).startsWith("HTTP/1.1 200 OK").doesNotContainIgnoringCase("Connection: close");
      assertThat(idle.exchange(body)).startsWith("HTTP/1.1 200 OK").doesNotContainIgnoringCase("Connection: close");
      slow.send(RawConnection.head(body) + body.substring(0, 10)); // a request in flight: its body is still arriving
      Http http = new Http(p.base);
      // In flight: the slow request, and the scrape itself.
      ServerApiTest.awaitTrue(() -> http.get("/metrics").body().contains("sluice_server_requests_in_flight 2.0"));

      p.signal("TERM");
      p.awaitLine("sluice: stopping");
      ServerApiTest.awaitTrue(() -> !acceptsConnections(p.base.getPort()));

      String answer;
      try {
        answer = idle.exchange(body);
      } catch (java.io.IOException e) {
        throw new AssertionError("no answer on the open connection; the server said " + p.lines(), e);
      }
      assertThat(answer).startsWith("HTTP/1.1 200 OK").containsIgnoringCase("Connection: close").contains("\"allowed\":true");
      assertThat(idle.atEnd()).as("closed after its last answer").isTrue();

      slow.send(body.substring(10));
      assertThat(slow.readResponse()).startsWith("HTTP/1.1 200 OK").containsIgnoringCase("Connection: close");
      assertThat(slow.atEnd()).isTrue();
      assertThat(p.exitStatus()).as("%s", p.lines()).isZero();
    }
  }

  private static boolean acceptsConnections(int port) {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
      return true;
    } catch (java.io.IOException e) {
      return false;
    }
  }

  /** One HTTP/1.1 connection written and read byte by byte, so a test controls when each part is sent. */
  static final class RawConnection implements AutoCloseable {
    private final java.net.Socket socket;
    private final java.io.InputStream in;

    RawConnection(int port) throws java.io.IOException {
      socket = new java.net.Socket("127.0.0.1", port);
      socket.setSoTimeout(15_000);
      in = new java.io.BufferedInputStream(socket.getInputStream());
    }

    static String head(String body) {
      return "POST /v1/acquire HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: "
          + body.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + "\r\n\r\n";
    }

    void send(String s) throws java.io.IOException {
      socket.getOutputStream().write(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      socket.getOutputStream().flush();
    }

    String exchange(String body) throws java.io.IOException {
      send(head(body) + body);
      return readResponse();
    }

    /** One response: the head up to the blank line, then Content-Length bytes of body. */
    String readResponse() throws java.io.IOException {
      StringBuilder head = new StringBuilder();
      while (!head.toString().endsWith("\r\n\r\n")) {
        int c = in.read();
        if (c < 0) {
          throw new java.io.EOFException("connection closed after " + Inputs.quote(head.toString()));
        }
        head.append((char) c);
      }
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?i)content-length: (\\d+)").matcher(head);
      int length = m.find() ? Integer.parseInt(m.group(1)) : 0;
      return head + new String(in.readNBytes(length), java.nio.charset.StandardCharsets.UTF_8);
    }

    boolean atEnd() throws java.io.IOException {
      return in.read() < 0;
    }

    @Override public void close() throws java.io.IOException {
      socket.close();
    }
  }

  /**
   * Issue 17.11: with the store down at start-up the warning appeared twice, once in JUL's two-line
   * format beside the banner. It is said once, and whatever logs uses one format.
   */
  @Test void anUnreachableStoreAtStartUpIsWarnedOnceInOneFormat() throws Exception {
    Path config = dir.resolve("policies.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    // Nothing listens on these ports (this helper's private range).
    for (List<String> store : List.of(List.of("--postgres", "jdbc:postgresql://127.0.0.1:7189/test?user=postgres&connectTimeout=1"),
        List.of("--redis", "redis://127.0.0.1:7188"))) {
      List<String> args = new java.util.ArrayList<>(List.of("--config", config.toString(), "--port", "0", "--store-timeout", "300ms"));
      args.addAll(store);
      try (ServeProcess p = ServeProcess.start(dir, args.toArray(String[]::new))) {
        p.signal("TERM");
        assertThat(p.exitStatus()).isZero();
        List<String> all = p.lines();
        List<String> lines = all.subList(0, all.indexOf("sluice: stop with Ctrl-C or SIGTERM") + 1); // start-up
        assertThat(lines.stream().filter(l -> l.toLowerCase(java.util.Locale.ROOT).contains("warn")))
            .as("%s: %s", store, lines).singleElement().asString().startsWith("sluice: WARNING: the store does not answer yet");
        assertThat(all).as("every line in one format: the banner's, or slf4j-simple's").allMatch(l -> l.startsWith("sluice: ")
            || l.matches("\\d{4}-\\d\\d-\\d\\dT.*"));
      }
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

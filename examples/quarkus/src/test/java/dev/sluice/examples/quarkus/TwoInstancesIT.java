package dev.sluice.examples.quarkus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.redis.SharedRedis;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Two instances of this application, its runner jar ({@code target/quarkus-app/quarkus-run.jar})
 * started twice as processes on ports of their own, on one Redis (the shared one,
 * {@code SLUICE_REDIS_URL}; skipped loudly when unreachable, failed under {@code CI=true}): requests
 * sent to both at once, all from one address (the rule's key), are admitted exactly the policy's limit
 * in total, and every other one is the 429.
 */
class TwoInstancesIT {
  static final int LIMIT = 20;
  static final int REQUESTS_EACH = 30;

  @Test
  void twoInstancesOnOneRedisAdmitExactlyTheLimitBetweenThem() throws Exception {
    SharedRedis.client(); // skip (or fail under CI) when the server is unreachable
    String policy = "quarkus-two-" + UUID.randomUUID(); // other builds share the server
    Path jar = Path.of("target", "quarkus-app", "quarkus-run.jar");
    assertThat(jar).as("the runner jar (mvn package builds it before the integration tests)").exists();
    List<Process> apps = new ArrayList<>();
    try {
      List<Integer> ports = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        int port = freePort();
        ports.add(port);
        apps.add(start(jar, port, policy, i));
      }
      HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
      for (int i = 0; i < 2; i++) {
        awaitReady(client, apps.get(i), ports.get(i));
      }
      List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
      for (int r = 0; r < REQUESTS_EACH; r++) {
        for (int port : ports) { // interleaved: both instances charge the one budget at the same time
          sent.add(client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/hello"))
              .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString()));
        }
      }
      Map<Integer, Integer> statuses = new TreeMap<>();
      for (CompletableFuture<HttpResponse<String>> f : sent) {
        HttpResponse<String> r = f.get(90, TimeUnit.SECONDS);
        statuses.merge(r.statusCode(), 1, Integer::sum);
        if (r.statusCode() == 429) {
          assertThat(r.body()).contains("\"policy\":\"" + policy + "\"");
        }
      }
      assertThat(statuses).isEqualTo(Map.of(200, LIMIT, 429, 2 * REQUESTS_EACH - LIMIT));
    } finally {
      for (Process p : apps) { // each by its own pid
        p.destroy();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      }
    }
  }

  private static Process start(Path jar, int port, String policy, int n) throws IOException {
    Path log = Files.createTempFile("sluice-quarkus-instance-" + n + "-", ".log");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = List.of(java, "-Dquarkus.http.port=" + port, "-Dquarkus.http.host=127.0.0.1",
        "-Dsluice.store=redis", "-Dsluice.redis.url=" + SharedRedis.URL, "-Dsluice.timeout=2s",
        "-Dsluice.policies[0].name=" + policy, "-Dsluice.policies[0].limit=" + LIMIT, "-Dsluice.policies[0].window=1h",
        "-Dsluice.http.rules[0].policy=" + policy, "-jar", jar.toString());
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }

  /** Polls the instance's readiness (the store answers) until it is up, or fails with what it logged. */
  private static void awaitReady(HttpClient client, Process app, int port) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (true) {
      assertThat(app.isAlive()).as("the instance on port %d exited", port).isTrue();
      try {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/q/health/ready"))
            .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException notYet) {
        // not listening yet
      }
      assertThat(System.nanoTime()).as("the instance on port %d was not ready within 120 s", port).isLessThan(deadline);
      Thread.sleep(100); // a poll interval, bounded by the deadline above
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}

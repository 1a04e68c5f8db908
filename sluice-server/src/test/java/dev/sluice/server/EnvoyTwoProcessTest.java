package dev.sluice.server;

import static dev.sluice.server.envoy.EnvoyClient.d;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.server.envoy.EnvoyClient;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two {@code sluice serve} processes on one Redis, each asked by 16 client threads at once over gRPC
 * about one descriptor: together they admit exactly the limit, for a fixed window and a token bucket.
 * Also the Envoy options' startup errors.
 */
class EnvoyTwoProcessTest {
  private static final Pattern GRPC = Pattern.compile("sluice: envoy rate-limit API \\(gRPC\\) on 127\\.0\\.0\\.1:(\\d+)");
  static final int LIMIT = 100;
  static final int THREADS = 16;
  static final int CALLS_PER_THREAD = 15; // 2 x 16 x 15 = 480 asks for 100 permits

  @TempDir Path dir;
  final String run = Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);

  @Test void twoProcessesOnOneRedisAdmitExactlyTheLimit() throws Exception {
    StoreSwitchTest.reachable("Redis", "127.0.0.1", 6379);
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, ServerApiTest.POLICIES);
    Path envoy = Files.createDirectory(dir.resolve("ratelimit"));
    Files.writeString(envoy.resolve("two.yaml"), """
        domain: two
        descriptors:
          - key: fixed
            rate_limit:
              unit: hour
              requests_per_unit: %1$d
          - key: bucket
            rate_limit:
              unit: hour
              requests_per_unit: 1
              sluice:
                algorithm: token-bucket
                burst: %1$d
        """.formatted(LIMIT));
    List<Process> processes = new ArrayList<>();
    try {
      List<Integer> ports = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        Path out = dir.resolve("child" + i + ".out");
        processes.add(new ProcessBuilder(java(), "-cp", System.getProperty("java.class.path"), "dev.sluice.server.SluiceCli", "serve",
            "--config", policies.toString(), "--port", "0", "--redis", StoreSwitchTest.REDIS, "--store-timeout", "2s",
            "--envoy-config", envoy.toString(), "--grpc-port", "0")
            .redirectErrorStream(true).redirectOutput(out.toFile()).start());
      }
      for (int i = 0; i < 2; i++) {
        ports.add(grpcPort(processes.get(i), dir.resolve("child" + i + ".out")));
      }
      for (String key : List.of("fixed", "bucket")) {
        assertThat(admittedTogether(ports, key, key + "-" + run)).as(key).isEqualTo(LIMIT);
      }
    } finally {
      for (Process p : processes) {
        p.toHandle().destroy();
      }
      for (Process p : processes) {
        if (!p.waitFor(20, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      }
    }
  }

  /** 16 threads per process, started together, each asking {@link #CALLS_PER_THREAD} times. */
  static int admittedTogether(List<Integer> ports, String key, String value) throws Exception {
    List<EnvoyClient> clients = ports.stream().map(EnvoyClient::new).toList();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS * clients.size());
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Integer>> counts = new ArrayList<>();
      for (EnvoyClient c : clients) {
        for (int t = 0; t < THREADS; t++) {
          counts.add(pool.submit(() -> {
            go.await();
            int ok = 0;
            for (int i = 0; i < CALLS_PER_THREAD; i++) {
              if (c.ask("two", d(key, value)).getOverallCode() == Code.OK) {
                ok++;
              }
            }
            return ok;
          }));
        }
      }
      go.countDown();
      int total = 0;
      for (Future<Integer> f : counts) {
        total += f.get(60, TimeUnit.SECONDS);
      }
      return total;
    } finally {
      pool.shutdownNow();
      clients.forEach(EnvoyClient::close);
    }
  }

  static int grpcPort(Process p, Path out) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    List<String> lines = List.of();
    while (System.nanoTime() < deadline && p.isAlive()) {
      lines = Files.readAllLines(out);
      for (String line : lines) {
        Matcher m = GRPC.matcher(line);
        if (m.find()) {
          return Integer.parseInt(m.group(1));
        }
      }
      Thread.sleep(20); // polling the child's output, not waiting for time to pass
    }
    throw new AssertionError("no gRPC banner from the child: " + String.join("\n", Files.readAllLines(out)));
  }

  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  @Test void envoyOptionErrorsExitWith2AndAClearMessage() throws Exception {
    Path config = dir.resolve("p.yaml");
    Files.writeString(config, ServerApiTest.POLICIES);
    assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--grpc-port", "0"))
        .isEqualTo("sluice: --grpc-port 0 given without --envoy-config; name the envoyproxy/ratelimit configuration");
    Path envoy = dir.resolve("rl.yaml");
    Files.writeString(envoy, "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      burst: 2\n");
    assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--envoy-config", envoy.toString()))
        .isEqualTo("sluice: --envoy-config " + envoy + " given without --grpc-port; choose the port of the gRPC API");
    assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--envoy-config", envoy.toString(), "--grpc-port", "0"))
        .isEqualTo("sluice: " + envoy + ":7: unknown key 'burst' in rate_limit; allowed here: unit, requests_per_unit, unlimited, name,"
            + " replaces, sluice");
    assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--envoy-config", envoy.toString(), "--grpc-port", "0",
        "--envoy-headers", "some"))
        .isEqualTo("sluice: --envoy-headers 'some' is unknown; use ietf, legacy, all or none");
    Path clash = dir.resolve("clash.yaml");
    Files.writeString(clash, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n");
    Files.writeString(dir.resolve("clash-policies.yaml"), "policies:\n  - {name: d.k, algorithm: fixed-window, limit: 1, window: 1s}\n");
    assertThat(ServeProcessTest.runErr("serve", "--config", dir.resolve("clash-policies.yaml").toString(), "--envoy-config", clash.toString(),
        "--grpc-port", "0"))
        .isEqualTo("sluice: policy 'd.k' of --config has the name of an --envoy-config rule's budget; rename the policy (a name is a budget,"
            + " and the two APIs would share it)");
    Path log = dir.resolve("log.yaml");
    Files.writeString(log, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 3, sluice: {algorithm: sliding-log}}\n");
    assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--envoy-config", log.toString(), "--grpc-port", "0",
        "--postgres", StoreSwitchTest.NOWHERE_POSTGRES))
        .startsWith("sluice: policy 'd.k' uses sliding-log, whose state grows with its limit; PostgreSQL keeps a fixed-size state");
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      Files.writeString(envoy, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n");
      assertThat(ServeProcessTest.runErr("serve", "--config", config.toString(), "--port", "0", "--envoy-config", envoy.toString(),
          "--grpc-port", Integer.toString(taken.getLocalPort())))
          .startsWith("sluice: --grpc-port " + taken.getLocalPort() + " cannot be bound on 127.0.0.1: Failed to bind");
    }
  }
}

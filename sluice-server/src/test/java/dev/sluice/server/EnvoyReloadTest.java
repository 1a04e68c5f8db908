package dev.sluice.server;

import static dev.sluice.server.envoy.EnvoyClient.d;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.server.envoy.EnvoyClient;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 31, item 3: Envoy mode's configuration reloads with the policy file (SIGHUP,
 * {@code POST /admin/reload}, {@code --watch}) under gRPC load, with no failed call; a rule that
 * stays keeps its count and its new numbers apply at the next hit; a bad configuration keeps the
 * one in force. The service runs as a real process on the memory store, asked over a real channel.
 */
class EnvoyReloadTest {
  static String config(int limit, boolean withBulk) {
    return """
        domain: shop
        descriptors:
          - key: user
            rate_limit:
              unit: hour
              requests_per_unit: %d
        """.formatted(limit) + (withBulk ? """
          - key: bulk
            rate_limit:
              unit: hour
              requests_per_unit: 1
        """ : "");
  }

  @TempDir Path dir;

  @Test void envoyConfigurationReloadsUnderLoadKeepingCounts() throws Exception {
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, ServerApiTest.POLICIES);
    Path envoyDir = Files.createDirectory(dir.resolve("envoy"));
    Path shop = envoyDir.resolve("shop.yaml");
    Files.writeString(shop, config(3, false));
    try (ServeProcess p = ServeProcess.start(dir, "--config", policies.toString(), "--port", "0", "--watch",
        "--envoy-config", envoyDir.toString(), "--grpc-port", "0");
         EnvoyClient client = new EnvoyClient(EnvoyTwoProcessTest.grpcPort(p.process, p.output))) {
      p.awaitLine("sluice: watching " + policies + " and " + envoyDir + ": a change to either's content reloads both");
      // Load on other keys for the whole test: every call must be answered, none may fail.
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong answered = new AtomicLong();
      ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
      List<Thread> load = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int thread = t;
        Thread th = new Thread(() -> {
          for (long i = 0; !stop.get(); i++) {
            try {
              client.ask("shop", d("user", "load-" + thread + "-" + (i % 500)));
              answered.incrementAndGet();
            } catch (Throwable e) {
              failures.add(e);
            }
          }
        });
        th.start();
        load.add(th);
      }
      try {
        assertThat(client.ask("shop", d("user", "alice")).getOverallCode()).isEqualTo(Code.OK);
        assertThat(client.ask("shop", d("user", "alice")).getOverallCode()).isEqualTo(Code.OK); // 2 of 3

        // SIGHUP: the limit rises to 5 and a rule is added; alice's 2 stay counted.
        Files.writeString(shop, config(5, true));
        p.signal("HUP");
        p.awaitLine("envoy: 2 rules in domains shop (0 unchanged, 1 changed, 1 added, 0 removed; counts kept) from " + envoyDir);
        assertThat(admitted(client, "alice", 10)).as("5 - 2 left after the reload").isEqualTo(3);
        assertThat(client.ask("shop", d("bulk", "b")).getOverallCode()).as("the added rule").isEqualTo(Code.OK);
        assertThat(client.ask("shop", d("bulk", "b")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);

        // --watch: the limit drops to 4; alice has used 5, so she is refused at once.
        Files.writeString(shop, config(4, false));
        p.awaitLine("envoy: 1 rules in domains shop (0 unchanged, 1 changed, 0 added, 1 removed; counts kept) from " + envoyDir);
        assertThat(client.ask("shop", d("user", "alice")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
        assertThat(client.ask("shop", d("bulk", "b")).getOverallCode()).as("a removed rule decides nothing").isEqualTo(Code.OK);

        // A bad configuration keeps everything in force, and says where.
        Files.writeString(shop, config(4, false).replace("requests_per_unit", "requests_per_unt"));
        p.awaitLine("sluice: reload failed, the policies in force stay: ");
        assertThat(p.lines().stream().filter(l -> l.startsWith("sluice: reload failed")).toList().get(0))
            .contains(shop.toString()).contains("requests_per_unt");
        assertThat(admitted(client, "carol", 10)).as("the 4 of the configuration in force").isEqualTo(4);
      } finally {
        stop.set(true);
        for (Thread t : load) {
          t.join();
        }
      }
      assertThat(failures).as("no call failed across three reloads").isEmpty();
      assertThat(answered.get()).isPositive();
      p.signal("TERM");
      assertThat(p.exitStatus()).isZero();
    }
  }

  private static int admitted(EnvoyClient client, String user, int asks) {
    int ok = 0;
    for (int i = 0; i < asks; i++) {
      if (client.ask("shop", d("user", user)).getOverallCode() == Code.OK) {
        ok++;
      }
    }
    return ok;
  }
}

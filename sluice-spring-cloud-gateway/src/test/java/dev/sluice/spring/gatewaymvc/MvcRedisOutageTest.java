package dev.sluice.spring.gatewaymvc;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.redis.RedisServerProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A Redis outage under the servlet gateway, for real: a private redis-server on this module's port
 * 7168 (the reactive RedisOutageTest's; the two surefire executions run one after the other), frozen
 * with SIGSTOP, so it keeps its sockets and answers nothing. Every route, one policy or two (the
 * all-of), answers within sluice.timeout plus a margin with the failure mode, here closed: Sluice's
 * 503, and the downstream is never called.
 */
class MvcRedisOutageTest extends MvcGatewayContractBase {
  static final int PORT = 7168;
  static final Duration TIMEOUT = Duration.ofMillis(300);
  /** What the gateway and a loaded 2-core machine may add to the deadline. */
  static final Duration MARGIN = Duration.ofMillis(1200);

  @Test void aFrozenRedisIsAnsweredWithinTheDeadlineByTheFailureMode() throws Exception {
    String id = id();
    try (RedisServerProcess redis = RedisServerProcess.start(PORT)) {
      gateway(new Class<?>[0], "sluice.store=redis", "sluice.redis.url=" + redis.uri(), "sluice.timeout=" + TIMEOUT.toMillis() + "ms",
          "sluice.failure-mode=closed",
          // With Spring Data Redis on the class path the starter uses the application's Lettuce factory: this server too.
          "spring.data.redis.url=" + redis.uri());
      for (String route : new String[] {"/hour/f", "/both/f", "/dsl/f"}) {
        assertThat(get(route, id).statusCode()).as(route).isEqualTo(200);
      }
      redis.freeze();
      try {
        int before = downstream.hits.get();
        for (String route : new String[] {"/hour/f", "/both/f", "/dsl/f"}) {
          long t0 = System.nanoTime();
          HttpResponse<String> down = get(route, id + route);
          Duration took = Duration.ofNanos(System.nanoTime() - t0);
          assertThat(took).as(route + " answered within the deadline plus a margin").isLessThan(TIMEOUT.plus(MARGIN));
          assertThat(down.statusCode()).as(route).isEqualTo(503);
          assertThat(down.headers().firstValue("Retry-After")).hasValue("1");
          assertThat(down.headers().firstValue("RateLimit-Policy")).as("an outage is no limit the client exceeded").isEmpty();
          JsonNode body = JSON.readTree(down.body());
          assertThat(body.get("status").asInt()).isEqualTo(503);
          assertThat(body.get("reason").asText()).isIn("timeout", "store_unavailable");
          assertThat(body.get("path").asText()).isEqualTo("failure_mode");
        }
        assertThat(downstream.hits.get()).isEqualTo(before);
      } finally {
        redis.thaw();
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (get("/hour/f", id + "-after").statusCode() != 200) {
        assertThat(System.nanoTime()).as("the gateway answers from Redis again").isLessThan(deadline);
      }
    } finally {
      stop();
    }
  }
}

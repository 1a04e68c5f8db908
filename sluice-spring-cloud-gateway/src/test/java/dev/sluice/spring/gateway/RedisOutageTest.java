package dev.sluice.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.redis.RedisServerProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A Redis outage under the gateway, for real: a private redis-server on this module's port 7168,
 * frozen with SIGSTOP (it keeps its sockets and answers nothing). Every route, one policy (async)
 * or two (the all-of), answers within sluice.timeout plus a small margin, never the gateway
 * client's timeout: closed with Sluice's 503, open by letting the request through.
 */
class RedisOutageTest {
  static final int PORT = 7168;
  static final Duration TIMEOUT = Duration.ofMillis(300);
  /** What the gateway, the event loops and a loaded 2-core machine may add to the deadline. */
  static final Duration MARGIN = Duration.ofMillis(700);
  static final ObjectMapper JSON = new ObjectMapper();

  @Test void aFrozenRedisIsAnsweredWithinTheDeadlineByTheFailureMode() throws Exception {
    String id = UUID.randomUUID().toString();
    try (Downstream downstream = new Downstream();
         RedisServerProcess redis = RedisServerProcess.start(PORT);
         ConfigurableApplicationContext closed = Gateways.start(downstream, new Class<?>[0], store(redis, "closed"));
         ConfigurableApplicationContext open = Gateways.start(downstream, new Class<?>[0], store(redis, "open"))) {
      String c = "http://127.0.0.1:" + Gateways.port(closed);
      String o = "http://127.0.0.1:" + Gateways.port(open);
      for (String route : new String[] {"/hour/f", "/both/f"}) {
        assertThat(Gateways.get(c, route, id).statusCode()).isEqualTo(200);
        assertThat(Gateways.get(o, route, id).statusCode()).isEqualTo(200);
      }

      redis.freeze();
      try {
        for (String route : new String[] {"/hour/f", "/both/f", "/rrl/f"}) {
          long t0 = System.nanoTime();
          HttpResponse<String> down = Gateways.get(c, route, id + route);
          Duration took = Duration.ofNanos(System.nanoTime() - t0);
          assertThat(took).as(route + " closed answered within the deadline plus a margin").isLessThan(TIMEOUT.plus(MARGIN));
          if (route.equals("/rrl/f")) {
            // The gateway's RequestRateLimiter answers a refusal itself: its status, 429.
            assertThat(down.statusCode()).isEqualTo(429);
            assertThat(down.headers().firstValue("Retry-After")).hasValue("1");
            continue;
          }
          assertThat(down.statusCode()).as(route).isEqualTo(503);
          assertThat(down.headers().firstValue("Retry-After")).hasValue("1");
          assertThat(down.headers().firstValue("RateLimit-Policy")).isEmpty();
          JsonNode body = JSON.readTree(down.body());
          assertThat(body.get("status").asInt()).isEqualTo(503);
          assertThat(body.get("reason").asText()).isIn("timeout", "store_unavailable");
          assertThat(body.get("path").asText()).isEqualTo("failure_mode");

          t0 = System.nanoTime();
          HttpResponse<String> through = Gateways.get(o, route, id + route);
          took = Duration.ofNanos(System.nanoTime() - t0);
          assertThat(took).as(route + " open answered within the deadline plus a margin").isLessThan(TIMEOUT.plus(MARGIN));
          assertThat(through.statusCode()).as(route + " open lets it through").isEqualTo(200);
          assertThat(through.body()).isEqualTo("ok");
        }
      } finally {
        redis.thaw();
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (Gateways.get(c, "/hour/f", id + "-after").statusCode() != 200) {
        assertThat(System.nanoTime()).as("the closed gateway answers from Redis again").isLessThan(deadline);
      }
    }
  }

  private static String[] store(RedisServerProcess redis, String mode) {
    return new String[] {"sluice.store=redis", "sluice.redis.url=" + redis.uri(), "sluice.timeout=" + TIMEOUT.toMillis() + "ms",
        "sluice.failure-mode=" + mode,
        // With Spring Data Redis on the class path the starter uses the application's Lettuce factory: this server too.
        "spring.data.redis.url=" + redis.uri()};
  }
}

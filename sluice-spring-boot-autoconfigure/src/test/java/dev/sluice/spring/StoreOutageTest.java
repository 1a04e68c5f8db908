package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.redis.RedisServerProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A Redis outage, for real: a private redis-server on this module's port 7161, frozen with SIGSTOP
 * (it keeps its sockets and answers nothing). Under {@code failure-mode: closed} a request is a 503
 * without limit headers and the store's health is DOWN; under {@code open} it is allowed; under
 * {@code fallback} (written {@code FALLBACK}: the words are read in any case, by the service's parser)
 * an in-process limiter of the same policy decides; a key at its limit never makes the health DOWN;
 * after the thaw they answer from Redis again.
 */
class StoreOutageTest {
  static final int PORT = 7161;

  @Test void closedAnswers503AndHealthGoesDownOpenAllowsBothRecover() throws Exception {
    String id = UUID.randomUUID().toString();
    try (RedisServerProcess redis = RedisServerProcess.start(PORT);
         ConfigurableApplicationContext closed = Apps.start(store(redis, "closed"));
         ConfigurableApplicationContext open = Apps.start(store(redis, "open"));
         ConfigurableApplicationContext fallback = Apps.start(store(redis, "FALLBACK"))) {
      Client c = Apps.client(closed);
      Client o = Apps.client(open);
      Client f = Apps.client(fallback);
      for (int i = 0; i < 3; i++) {
        assertThat(c.get("/api/hello", "X-Client", id).statusCode()).isEqualTo(200);
      }
      assertThat(c.get("/api/hello", "X-Client", id).statusCode()).isEqualTo(429);
      assertThat(health(c).get("status").asText()).as("a key at its limit is not an outage").isEqualTo("UP");

      redis.freeze();
      HttpResponse<String> down = c.get("/api/hello", "X-Client", id + "-2");
      assertThat(down.statusCode()).isEqualTo(503);
      assertThat(down.headers().firstValue("Retry-After")).hasValue("1");
      assertThat(down.headers().firstValue("RateLimit-Policy")).isEmpty();
      assertThat(down.headers().firstValue("X-RateLimit-Remaining")).isEmpty();
      JsonNode body = Client.json(down);
      assertThat(body.get("status").asInt()).isEqualTo(503);
      assertThat(body.get("reason").asText()).isIn("timeout", "store_unavailable");
      assertThat(body.get("path").asText()).isEqualTo("failure_mode");
      assertThat(body.has("remaining")).isFalse();
      // The annotation follows the failure mode too.
      assertThat(c.get("/greet/" + id).statusCode()).isEqualTo(503);
      JsonNode h = health(c);
      assertThat(h.get("status").asText()).isEqualTo("DOWN");
      assertThat(h.at("/details/path").asText()).isEqualTo("failure_mode");
      HttpResponse<String> allowed = o.get("/api/hello", "X-Client", id + "-3");
      assertThat(allowed.statusCode()).isEqualTo(200);
      assertThat(allowed.headers().firstValue("RateLimit-Policy")).as("an allowance no store decided has no limits").isEmpty();
      // Issue 32: the endpoint counted a decision the store did not make as allowed (or refused) and
      // as failed too, so its counts did not add up to the decisions; now failed only.
      JsonNode counts = o.json("/actuator/ratelimits").get("policies").get(0);
      assertThat(counts.get("name").asText()).isEqualTo("api");
      assertThat(counts.get("decisions").toString()).isEqualTo("{\"allowed\":0,\"refused\":0,\"failed\":1}");
      for (int i = 0; i < 3; i++) {
        HttpResponse<String> local = f.get("/api/hello", "X-Client", id + "-5");
        assertThat(local.statusCode()).isEqualTo(200);
        assertThat(local.headers().firstValue("X-RateLimit-Remaining")).as("the fallback's own count").hasValue(Integer.toString(2 - i));
      }
      HttpResponse<String> overLocally = f.get("/api/hello", "X-Client", id + "-5");
      assertThat(overLocally.statusCode()).as("limited by the fallback while the store is down").isEqualTo(429);
      assertThat(Client.json(overLocally).get("path").asText()).isEqualTo("fallback");

      redis.thaw();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (c.get("/api/hello", "X-Client", id + "-4").statusCode() != 200) {
        assertThat(System.nanoTime()).as("the closed instance answers from Redis again").isLessThan(deadline);
      }
      assertThat(health(c).get("status").asText()).isEqualTo("UP");
      assertThat(o.get("/api/hello", "X-Client", id + "-4").headers().firstValue("X-RateLimit-Remaining")).hasValue("1");
    }
  }

  private static String[] store(RedisServerProcess redis, String mode) {
    return new String[] {"sluice.store=redis", "sluice.redis.url=" + redis.uri(), "sluice.timeout=300ms",
        "sluice.failure-mode=" + mode};
  }

  private static JsonNode health(Client c) {
    return c.json("/actuator/health/sluice");
  }
}

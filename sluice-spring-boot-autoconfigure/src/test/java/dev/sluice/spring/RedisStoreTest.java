package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.SharedRedis;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Spring MVC on the shared Redis ({@code SLUICE_REDIS_URL}) through the application's Lettuce
 * connection factory: two application instances (two contexts in this JVM, each on its own random
 * port) share one budget and admit exactly its limit together; the annotation on Redis; the
 * Actuator endpoint and the store's health.
 */
class RedisStoreTest {
  /** Redis on, no database: Boot 3.5's name, then Boot 4's (a name not on the class path is ignored). */
  static final String NO_DATABASE = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration,"
      + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration";

  static String[] redis() {
    // sluice.redis.url names a port nothing listens on: the limiters must come from the connection factory.
    return new String[] {"sluice.store=redis", "sluice.timeout=2s", "spring.autoconfigure.exclude=" + NO_DATABASE,
        "spring.data.redis.url=" + SharedRedis.URL, "sluice.redis.url=redis://127.0.0.1:7169"};
  }

  @BeforeAll static void sharedRedis() {
    SharedRedis.client();
  }

  @Test void twoInstancesSharingRedisAdmitExactlyTheLimitTogether() throws Exception {
    String id = UUID.randomUUID().toString();
    try (ConfigurableApplicationContext a = Apps.start(redis()); ConfigurableApplicationContext b = Apps.start(redis())) {
      assertThat(a.getBean(RateLimiterRegistry.class).limiter("bulk")).isInstanceOf(RedisRateLimiter.class);
      Client ca = Apps.client(a);
      Client cb = Apps.client(b);
      assertThat(Apps.admitted(300, 429, () -> "/bulk", id, ca, cb)).isEqualTo(100);
      assertThat(cb.get("/bulk", "X-Client", id).statusCode()).isEqualTo(429);
      assertThat(ca.get("/bulk", "X-Client", id + "-other").statusCode()).isEqualTo(200);

      // The annotation on Redis: two calls, then the problem response, whichever instance answers.
      assertThat(ca.get("/greet/" + id).statusCode()).isEqualTo(200);
      assertThat(cb.get("/greet/" + id).statusCode()).isEqualTo(200);
      assertThat(ca.get("/greet/" + id).statusCode()).isEqualTo(429);

      JsonNode endpoint = ca.json("/actuator/ratelimits");
      assertThat(endpoint.get("store").asText()).isEqualTo("redis");
      JsonNode peek = cb.json("/actuator/ratelimits/bulk/header:x-client:" + id);
      assertThat(peek.get("allowed").asBoolean()).isFalse();
      assertThat(peek.get("remaining").asLong()).isZero();
      JsonNode health = ca.json("/actuator/health");
      assertThat(health.at("/components/sluice/status").asText()).isEqualTo("UP");
      assertThat(health.at("/components/sluice/details/store").asText()).isEqualTo("redis");
    }
  }
}

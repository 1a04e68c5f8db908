package dev.sluice.spring;

import static dev.sluice.spring.EventLoops.BLOCKED;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.RateLimiter;
import dev.sluice.redis.SharedRedis;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * WebFlux on the shared Redis (the application's Lettuce connection factory): 16 threads admitted
 * exactly, a {@code Mono} method under the annotation and its cost settled, and no blocking call on
 * any event loop (Reactor Netty's or Lettuce's) meanwhile.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    "spring.main.web-application-type=reactive", "sluice.store=redis", "sluice.timeout=2s",
    "spring.autoconfigure.exclude=" + RedisStoreTest.NO_DATABASE, "spring.data.redis.url=${SLUICE_REDIS_URL:redis://127.0.0.1:6379}"})
class WebFluxRedisTest {
  @LocalServerPort int port;
  @Autowired RateLimiterRegistry registry;

  @BeforeAll static void redisAndBlockHound() {
    SharedRedis.client();
    EventLoops.watch();
  }

  @Test void sixteenThreadsAreAdmittedExactlyAndNothingBlocks() throws Exception {
    String id = UUID.randomUUID().toString();
    Client client = new Client(port);
    client.warmUp("/bulk", "X-Client", "warm-up-" + id);
    BLOCKED.clear();
    assertThat(Apps.admitted(240, 429, () -> "/bulk", id, client)).isEqualTo(100);
    assertThat(client.get("/reactive/" + id).statusCode()).isEqualTo(200);
    assertThat(client.get("/reactive/" + id).statusCode()).isEqualTo(200);
    assertThat(client.get("/reactive/" + id).statusCode()).isEqualTo(429);

    // A Mono method's cost, settled on Redis (one EVALSHA per settlement, off the event loops).
    long used = 0;
    for (long u : new long[] {12, 100, 170}) {
      assertThat(client.get("/complete-later/" + id + "?max=100&used=" + u).body()).isEqualTo(Long.toString(u));
      used += u;
    }
    RateLimiter tokens = registry.limiter("tokens");
    assertThat(tokens.policy().limit() - tokens.peek("value:" + id).remaining()).isEqualTo(used);
    assertThat(BLOCKED).isEmpty();
  }
}

package dev.sluice.spring.gateway;

import dev.sluice.redis.SharedRedis;
import org.junit.jupiter.api.BeforeAll;

/** The gateway on the shared Redis (SLUICE_REDIS_URL; skipped loudly when unreachable, failed under CI=true). */
class RedisGatewayTest extends GatewayContract {
  @BeforeAll static void start() throws Exception {
    SharedRedis.client();
    // The deadline of the starter's WebFlux Redis test: a machine shared with other builds is slow at times.
    gateway(new Class<?>[0], "sluice.store=redis", "sluice.redis.url=" + SharedRedis.URL, "sluice.timeout=2s");
  }

  @Override boolean exactClock() {
    return false;
  }
}

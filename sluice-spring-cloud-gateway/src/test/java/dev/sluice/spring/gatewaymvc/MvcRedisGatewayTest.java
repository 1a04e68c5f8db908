package dev.sluice.spring.gatewaymvc;

import dev.sluice.redis.SharedRedis;
import org.junit.jupiter.api.BeforeAll;

/** The servlet gateway on the shared Redis (SLUICE_REDIS_URL; skipped loudly when unreachable, failed under CI=true). */
class MvcRedisGatewayTest extends MvcGatewayContract {
  @BeforeAll static void start() throws Exception {
    SharedRedis.client();
    // A long deadline: this class asserts what is decided, not how fast (a loaded 2-core machine).
    gateway(new Class<?>[0], "sluice.store=redis", "sluice.redis.url=" + SharedRedis.URL, "sluice.timeout=5s",
        // With Spring Data Redis on the class path the starter uses the application's Lettuce factory: this Redis too.
        "spring.data.redis.url=" + SharedRedis.URL);
  }

  @Override boolean exactClock() {
    return false;
  }
}

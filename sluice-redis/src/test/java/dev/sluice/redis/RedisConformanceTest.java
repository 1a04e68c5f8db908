package dev.sluice.redis;

import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;

/** The whole conformance kit against the shared standalone Redis, on the kit's ticker. */
class RedisConformanceTest extends RateLimiterContract {
  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker)
        .timeout(Duration.ofSeconds(2)).build();
  }

}

package dev.sluice.redis;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.tck.RateLimiterContract;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** The whole conformance kit against the shared standalone Redis, on the kit's ticker. */
class RedisConformanceTest extends RateLimiterContract {
  /** The private server the outage cases freeze (SIGSTOP) and thaw; never the shared one. */
  private static final int OUTAGE_PORT = 7140;

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit asserts decisions, and a loaded machine must not turn them into timeouts.
    return RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker)
        .timeout(Duration.ofSeconds(10)).build();
  }

  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    RedisServerProcess server = RedisServerProcess.start(OUTAGE_PORT);
    RedisClient client = RedisClient.create(server.uri());
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).ticker(ticker)
        .timeout(Duration.ofMillis(200)).failureMode(mode).build();
    return Optional.of(new RedisOutage(limiter, List.of(server), () -> {
      client.shutdown();
      server.close();
    }));
  }
}

package dev.sluice.redis;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.tck.RateLimiterContract;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** The whole conformance kit against the shared standalone Redis, on the kit's ticker. */
class RedisConformanceTest extends RateLimiterContract {
  /** The private server the outage cases freeze (SIGSTOP) and thaw; never the shared one. */
  private static final int OUTAGE_PORT = 7140;
  /** Longer than the suite runs. */
  static final Duration KIT_GRACE = Duration.ofMinutes(30);
  /** The lagging-clock case's limiter: its keys outlive their state by 1.05 s, which the case waits out. */
  static final Duration SHORT_EXPIRY_GRACE = Duration.ofMillis(50);
  static final Duration SHORT_EXPIRY_TIMEOUT = Duration.ofSeconds(1);

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit asserts decisions, and a loaded machine must not turn them into timeouts.
    // The kit's ticker stands still while its cases run: a grace longer than the suite keeps its
    // readings from lagging (RedisRateLimiter.Builder.expiryGrace).
    return RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker)
        .timeout(Duration.ofSeconds(10)).expiryGrace(KIT_GRACE).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker).timeout(Duration.ofSeconds(10))
        .expiryGrace(KIT_GRACE).issuer(issuer).build());
  }

  @Override protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, dev.sluice.RateLimitListener listener) {
    return Optional.of(RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker).timeout(Duration.ofSeconds(10))
        .expiryGrace(KIT_GRACE).listener(listener, true).build());
  }

  @Override protected RateLimiter newLimiterWithShortExpiry(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker)
        .timeout(SHORT_EXPIRY_TIMEOUT).expiryGrace(SHORT_EXPIRY_GRACE).build();
  }

  @Override protected Duration shortExpiryOutlives() {
    return SHORT_EXPIRY_GRACE.plus(SHORT_EXPIRY_TIMEOUT);
  }

  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    RedisServerProcess server = RedisServerProcess.start(OUTAGE_PORT);
    RedisClient client = RedisClient.create(server.uri());
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).ticker(ticker)
        .timeout(Duration.ofMillis(200)).expiryGrace(KIT_GRACE).failureMode(mode).build();
    return Optional.of(new RedisOutage(limiter, List.of(server), () -> {
      client.shutdown();
      server.close();
    }));
  }
}

package dev.sluice.redis.redisson;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.redis.RedisOutage;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.redis.SharedRedis;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.redisson.api.RedissonClient;

/** The whole conformance kit on Redisson against the shared standalone Redis, on the kit's ticker. */
class RedissonConformanceTest extends RateLimiterContract {
  /** The private server the outage cases freeze (SIGSTOP) and thaw; never the shared one. */
  private static final int OUTAGE_PORT = 7441;
  /** Longer than the suite runs: the kit's ticker stands still while its cases run. */
  static final Duration KIT_GRACE = Duration.ofMinutes(30);
  static final Duration SHORT_EXPIRY_GRACE = Duration.ofMillis(50);
  static final Duration SHORT_EXPIRY_TIMEOUT = Duration.ofSeconds(1);
  private static RedissonClient redisson;
  private static RedissonTransport transport;

  private static synchronized RedissonTransport transport() {
    if (transport == null) {
      SharedRedis.client(); // skipped loudly (failed under CI) when the shared server is unreachable
      redisson = RedissonClients.standalone(SharedRedis.URL);
      transport = RedissonTransport.of(redisson);
    }
    return transport;
  }

  @AfterAll static void close() {
    if (transport != null) {
      transport.close();
      redisson.shutdown();
    }
  }

  private static RedisRateLimiter.Builder builder(Policy policy, Ticker ticker) {
    // A generous deadline: the kit asserts decisions, and a loaded machine must not turn them into timeouts.
    return RedisRateLimiter.builder(policy, transport()).ticker(ticker).timeout(Duration.ofSeconds(10)).expiryGrace(KIT_GRACE);
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return builder(policy, ticker).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(builder(policy, ticker).issuer(issuer).build());
  }

  @Override protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, RateLimitListener listener) {
    return Optional.of(builder(policy, ticker).listener(listener, true).build());
  }

  @Override protected RateLimiter newLimiterWithShortExpiry(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, transport()).ticker(ticker).timeout(SHORT_EXPIRY_TIMEOUT).expiryGrace(SHORT_EXPIRY_GRACE)
        .build();
  }

  @Override protected Duration shortExpiryOutlives() {
    return SHORT_EXPIRY_GRACE.plus(SHORT_EXPIRY_TIMEOUT);
  }

  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    RedisServerProcess server = RedisServerProcess.start(OUTAGE_PORT);
    RedissonClient client = RedissonClients.standalone(server.uri());
    RedissonTransport t = RedissonTransport.of(client);
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, t).ticker(ticker).timeout(Duration.ofMillis(200))
        .expiryGrace(KIT_GRACE).failureMode(mode).build();
    return Optional.of(new RedisOutage(limiter, List.of(server), () -> {
      t.close();
      client.shutdown();
      server.close();
    }));
  }
}

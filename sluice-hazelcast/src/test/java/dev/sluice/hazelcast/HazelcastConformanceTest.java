package dev.sluice.hazelcast;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The whole conformance kit against a three-member cluster on loopback, on the kit's ticker; each
 * limiter on the next member in turn, so budgets are shared across members and most steps take a hop.
 * The sliding log is skipped (an entry holds a fixed-size state); there is no outage fixture (a
 * cluster whose members are all stopped loses its state, which the outage cases do not expect; the
 * crash and fault tests cover a lost member).
 */
class HazelcastConformanceTest extends RateLimiterContract {
  /** Longer than the suite runs: the kit's ticker stands still while its cases run. */
  static final Duration KIT_GRACE = Duration.ofMinutes(30);
  static final Duration SHORT_EXPIRY_GRACE = Duration.ofMillis(50);
  static final Duration SHORT_EXPIRY_TIMEOUT = Duration.ofSeconds(1);
  private static final AtomicInteger NEXT = new AtomicInteger();

  private static HazelcastRateLimiter.Builder builder(Policy policy, Ticker ticker) {
    Cluster c = SharedCluster.get();
    return HazelcastRateLimiter.builder(policy, c.member(Math.floorMod(NEXT.getAndIncrement(), 3))).ticker(ticker)
        .timeout(Duration.ofSeconds(10)).expiryGrace(KIT_GRACE);
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
    return builder(policy, ticker).timeout(SHORT_EXPIRY_TIMEOUT).expiryGrace(SHORT_EXPIRY_GRACE).build();
  }

  @Override protected Duration shortExpiryOutlives() {
    return SHORT_EXPIRY_GRACE.plus(SHORT_EXPIRY_TIMEOUT);
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return HazelcastBackend.CAPABILITIES.runs(algorithm);
  }
}

package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.RateLimiter;
import dev.sluice.http.HttpVerdict;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * The shared store's health: a peek (never a charge) on a key of its own through the first policy's
 * limiter. Down only when the store could not answer (the peek was decided by the failure mode or
 * the fallback); a key at its limit is the store working, not failing.
 */
public class StoreHealthIndicator extends AbstractHealthIndicator {
  /** The key peeked at. */
  public static final String KEY = "sluice-health-probe";
  private final RateLimiterRegistry registry;

  StoreHealthIndicator(RateLimiterRegistry registry) {
    super("Sluice store health check failed");
    this.registry = registry;
  }

  @Override protected void doHealthCheck(Health.Builder builder) {
    builder.withDetail("store", registry.store());
    if (registry.limiters().isEmpty()) {
      builder.up();
      return;
    }
    RateLimiter l = registry.limiters().values().iterator().next();
    Decision d = l.peek(KEY, l.policy());
    if (d.path() == Path.PRIMARY) {
      builder.up();
    } else {
      builder.down().withDetail("reason", HttpVerdict.code(d.reason())).withDetail("path", HttpVerdict.code(d.path()));
    }
  }
}

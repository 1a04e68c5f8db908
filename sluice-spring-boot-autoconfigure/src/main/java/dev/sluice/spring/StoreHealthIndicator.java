package dev.sluice.spring;

import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * The shared store's health on Spring Boot 3.5 (Boot 4's health API is in another package: {@code
 * Boot4StoreHealthIndicator}). Down only when the store could not answer, never because a limit is
 * hit; {@code StoreProbe} decides.
 */
public class StoreHealthIndicator extends AbstractHealthIndicator {
  /** The key peeked at. */
  public static final String KEY = StoreProbe.KEY;
  private final RateLimiterRegistry registry;

  StoreHealthIndicator(RateLimiterRegistry registry) {
    super("Sluice store health check failed");
    this.registry = registry;
  }

  @Override protected void doHealthCheck(Health.Builder builder) {
    StoreProbe p = StoreProbe.check(registry);
    (p.up() ? builder.up() : builder.down()).withDetails(p.details());
  }
}

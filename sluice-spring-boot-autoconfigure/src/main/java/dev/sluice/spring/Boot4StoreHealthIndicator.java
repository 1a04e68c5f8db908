package dev.sluice.spring;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The shared store's health on Spring Boot 4, whose health API moved to {@code
 * org.springframework.boot.health.contributor}; the same {@code StoreProbe} as {@link
 * StoreHealthIndicator} decides. Compiled against {@code spring-boot-health} 4 (an optional
 * dependency) and registered only when that package is on the class path.
 */
final class Boot4StoreHealthIndicator extends AbstractHealthIndicator {
  private final RateLimiterRegistry registry;

  Boot4StoreHealthIndicator(RateLimiterRegistry registry) {
    super("Sluice store health check failed");
    this.registry = registry;
  }

  @Override protected void doHealthCheck(Health.Builder builder) {
    StoreProbe p = StoreProbe.check(registry);
    (p.up() ? builder.up() : builder.down()).withDetails(p.details());
  }
}

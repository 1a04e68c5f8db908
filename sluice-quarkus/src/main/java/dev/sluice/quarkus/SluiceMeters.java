package dev.sluice.quarkus;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.micrometer.RateLimitMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;

/**
 * Sluice's Micrometer meters, registered by the extension only when the application has
 * {@code quarkus-micrometer} and {@code dev.sluice:sluice-micrometer}: a {@link RateLimitMetrics}
 * (the Spring starter's meters, by the same names: {@code sluice.decisions}, {@code sluice.refunds},
 * {@code sluice.store.latency}, ...) that every limiter reports to through this listener, bound to
 * Quarkus's registry at start, with {@code sluice.keys.tracked} for each policy the memory store
 * keeps. An application that has a {@code RateLimitMetrics} bean of its own (another near-limit
 * fraction) gets that one bound instead; it is told as every listener bean is, not through this one.
 */
@Singleton
public class SluiceMeters implements RateLimitListener {
  /** The extension's meters; null when the application has its own {@code RateLimitMetrics} bean. */
  private final RateLimitMetrics own;
  private final Instance<RateLimitMetrics> application;

  @Inject
  SluiceMeters(Instance<RateLimitMetrics> application) {
    this.application = application;
    this.own = application.isResolvable() ? null : RateLimitMetrics.builder().build();
  }

  /** Binds the meters to Quarkus's registry once Sluice is built (its limiters exist). */
  void bind(@Observes StartupEvent event, Sluice sluice, MeterRegistry registry) {
    RateLimitMetrics metrics = own != null ? own : application.get();
    for (Policy p : sluice.policies()) {
      RateLimiter l = sluice.limiter(p.name());
      if (l instanceof MemoryRateLimiter memory) {
        metrics.trackedKeys(p.name(), memory::trackedKeys);
      }
    }
    metrics.bindTo(registry);
  }

  @Override public void onDecision(Decision decision, String key) {
    if (own != null) {
      own.onDecision(decision, key);
    }
  }

  @Override public void onRefusal(Decision decision, String key) {
    if (own != null) {
      own.onRefusal(decision, key);
    }
  }

  @Override public void onRefund(Policy policy, Refund result) {
    if (own != null) {
      own.onRefund(policy, result);
    }
  }

  @Override public void onSettle(Policy policy, Settlement result) {
    if (own != null) {
      own.onSettle(policy, result);
    }
  }

  @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
    if (own != null) {
      own.onStoreCall(policy, latencyNanos, error);
    }
  }
}

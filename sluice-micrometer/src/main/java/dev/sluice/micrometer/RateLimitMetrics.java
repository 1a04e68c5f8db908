package dev.sluice.micrometer;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.kernel.Inputs;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;

/**
 * A {@link RateLimitListener} that publishes Sluice's decisions as Micrometer meters, and a
 * {@link MeterBinder} that registers them (plus gauges over suppliers you pass).
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@code sluice.decisions}</td><td>counter</td><td>policy, outcome (allowed, refused), reason</td><td>every decision</td></tr>
 *   <tr><td>{@code sluice.decisions.near.limit}</td><td>counter</td><td>policy</td><td>allowed decisions that left fewer than {@code nearLimitFraction} x limit permits</td></tr>
 *   <tr><td>{@code sluice.refunds}</td><td>counter</td><td>policy, result (applied, no_effect, failed)</td><td>every refund</td></tr>
 *   <tr><td>{@code sluice.settlements}</td><td>counter</td><td>policy, result (applied, no_effect, failed)</td><td>every settlement at an actual cost</td></tr>
 *   <tr><td>{@code sluice.store.latency}</td><td>timer</td><td>policy</td><td>every call to a shared store</td></tr>
 *   <tr><td>{@code sluice.store.errors}</td><td>counter</td><td>policy, exception</td><td>store calls that failed</td></tr>
 *   <tr><td>{@code sluice.keys.tracked}</td><td>gauge</td><td>limiter</td><td>keys a memory tier tracks</td></tr>
 *   <tr><td>{@code sluice.slots.occupied}</td><td>gauge</td><td>limiter</td><td>hashed slots in use</td></tr>
 * </table>
 *
 * <pre>{@code
 * RateLimitMetrics metrics = RateLimitMetrics.builder().nearLimitFraction(0.1).build();
 * MemoryRateLimiter limiter = MemoryRateLimiter.builder(policy).listener(metrics, false).build();
 * metrics.trackedKeys("api", limiter::trackedKeys);
 * metrics.bindTo(registry);
 * }</pre>
 *
 * <p>Keys are never used as tags (unbounded cardinality, and personal data). Events that arrive
 * before {@link #bindTo} are not counted. The hot path allocates nothing once a policy's meters exist:
 * they are cached per policy name and looked up by index.
 */
public final class RateLimitMetrics implements RateLimitListener, MeterBinder {
  private static final Reason[] REASONS = Reason.values();
  private static final Refund[] REFUNDS = Refund.values();
  private static final Settlement[] SETTLEMENTS = Settlement.values();

  private final double nearLimitFraction;
  private final Map<String, DoubleSupplier> trackedKeys = new ConcurrentHashMap<>();
  private final Map<String, DoubleSupplier> slots = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, PolicyMeters> meters = new ConcurrentHashMap<>();
  private volatile MeterRegistry registry;

  private RateLimitMetrics(Builder b) {
    this.nearLimitFraction = b.nearLimitFraction;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The fraction of the limit under which an allowed decision counts as near the limit. */
  public double nearLimitFraction() {
    return nearLimitFraction;
  }

  /** Publishes {@code sluice.keys.tracked{limiter=name}} from {@code supplier} (e.g. {@code MemoryRateLimiter::trackedKeys}). */
  public RateLimitMetrics trackedKeys(String limiterName, DoubleSupplier supplier) {
    trackedKeys.put(Inputs.notNull("limiter name", limiterName), Inputs.notNull("supplier", supplier));
    MeterRegistry r = registry;
    if (r != null) {
      gauge(r, "sluice.keys.tracked", "Keys a memory-tier limiter tracks", limiterName, supplier);
    }
    return this;
  }

  /** Publishes {@code sluice.slots.occupied{limiter=name}} from {@code supplier} (e.g. {@code HashedSlotRateLimiter::occupiedSlots}). */
  public RateLimitMetrics slotOccupancy(String limiterName, DoubleSupplier supplier) {
    slots.put(Inputs.notNull("limiter name", limiterName), Inputs.notNull("supplier", supplier));
    MeterRegistry r = registry;
    if (r != null) {
      gauge(r, "sluice.slots.occupied", "Hashed slots whose state still matters", limiterName, supplier);
    }
    return this;
  }

  @Override public void bindTo(MeterRegistry registry) {
    Inputs.notNull("registry", registry);
    synchronized (this) {
      if (this.registry != null && this.registry != registry) {
        throw new IllegalStateException("RateLimitMetrics is already bound to a registry; "
            + "bind a CompositeMeterRegistry to publish to several");
      }
      this.registry = registry;
    }
    trackedKeys.forEach((name, s) -> gauge(registry, "sluice.keys.tracked", "Keys a memory-tier limiter tracks", name, s));
    slots.forEach((name, s) -> gauge(registry, "sluice.slots.occupied", "Hashed slots whose state still matters", name, s));
  }

  private static void gauge(MeterRegistry r, String name, String description, String limiter, DoubleSupplier s) {
    Gauge.builder(name, s, DoubleSupplier::getAsDouble).description(description).tag("limiter", limiter).strongReference(true).register(r);
  }

  @Override public void onDecision(Decision decision, String key) {
    PolicyMeters m = metersOf(decision.policy());
    if (m == null) {
      return;
    }
    m.decision(decision.allowed(), decision.reason()).increment();
    if (decision.allowed() && decision.remaining() < nearLimitFraction * decision.limit()) {
      m.nearLimit.increment();
    }
  }

  @Override public void onRefund(Policy policy, Refund result) {
    PolicyMeters m = metersOf(policy);
    if (m != null) {
      m.refund(result).increment();
    }
  }

  @Override public void onSettle(Policy policy, Settlement result) {
    PolicyMeters m = metersOf(policy);
    if (m != null) {
      m.settlement(result).increment();
    }
  }

  @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
    PolicyMeters m = metersOf(policy);
    if (m == null) {
      return;
    }
    m.latency.record(latencyNanos, TimeUnit.NANOSECONDS);
    if (error != null) {
      Counter.builder("sluice.store.errors").description("Shared-store calls that failed")
          .tags("policy", policy.name(), "exception", error.getClass().getSimpleName()).register(m.registry).increment();
    }
  }

  private PolicyMeters metersOf(Policy policy) {
    MeterRegistry r = registry;
    if (r == null) {
      return null;
    }
    PolicyMeters m = meters.get(policy.name());
    return m != null ? m : meters.computeIfAbsent(policy.name(), n -> new PolicyMeters(r, n));
  }

  /** One policy's meters; a decision counter per (outcome, reason), built on first use. */
  private static final class PolicyMeters {
    final MeterRegistry registry;
    final String policy;
    final Counter[] decisions = new Counter[2 * REASONS.length];
    final Counter[] refunds = new Counter[REFUNDS.length];
    final Counter[] settlements = new Counter[SETTLEMENTS.length];
    final Counter nearLimit;
    final Timer latency;

    PolicyMeters(MeterRegistry registry, String policy) {
      this.registry = registry;
      this.policy = policy;
      this.nearLimit = Counter.builder("sluice.decisions.near.limit")
          .description("Allowed decisions that left fewer than the near-limit fraction of the limit")
          .tag("policy", policy).register(registry);
      this.latency = Timer.builder("sluice.store.latency").description("Latency of shared-store calls")
          .tag("policy", policy).register(registry);
    }

    // Racy lazy init is fine: registering the same meter twice returns the same instance.
    Counter decision(boolean allowed, Reason reason) {
      int i = (allowed ? 0 : REASONS.length) + reason.ordinal();
      Counter c = decisions[i];
      if (c == null) {
        c = Counter.builder("sluice.decisions").description("Rate-limit decisions")
            .tags(Tags.of("policy", policy, "outcome", allowed ? "allowed" : "refused",
                "reason", reason.name().toLowerCase(Locale.ROOT)))
            .register(registry);
        decisions[i] = c;
      }
      return c;
    }

    Counter refund(Refund result) {
      Counter c = refunds[result.ordinal()];
      if (c == null) {
        c = Counter.builder("sluice.refunds").description("Refunds and what they did")
            .tags("policy", policy, "result", result.name().toLowerCase(Locale.ROOT)).register(registry);
        refunds[result.ordinal()] = c;
      }
      return c;
    }

    Counter settlement(Settlement result) {
      Counter c = settlements[result.ordinal()];
      if (c == null) {
        c = Counter.builder("sluice.settlements").description("Settlements at an actual cost and what they did")
            .tags("policy", policy, "result", result.name().toLowerCase(Locale.ROOT)).register(registry);
        settlements[result.ordinal()] = c;
      }
      return c;
    }
  }

  /** Builds a {@link RateLimitMetrics}. */
  public static final class Builder {
    private double nearLimitFraction = 0.1;

    private Builder() {}

    /**
     * An allowed decision counts as near the limit when its remaining permits are below
     * {@code fraction} x limit. Default 0.1; 0 disables the meter's increments.
     */
    public Builder nearLimitFraction(double fraction) {
      if (!(fraction >= 0 && fraction <= 1)) {
        throw new IllegalArgumentException("nearLimitFraction " + fraction + " is outside [0, 1]; use e.g. 0.1 for \"under 10% left\"");
      }
      this.nearLimitFraction = fraction;
      return this;
    }

    public RateLimitMetrics build() {
      return new RateLimitMetrics(this);
    }
  }
}

package dev.sluice.compose;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.internal.Checks;

/**
 * A bounded AIMD (additive increase, multiplicative decrease) refill proposal driven by an upstream
 * throttling signal: a 429 from the API you call, a {@code Retry-After}, an error-budget event.
 * It <b>proposes</b> a value and never changes a limiter by itself: the caller decides whether the
 * signal is fresh and trustworthy, and applies the proposal (for example by building a limiter with
 * {@link Proposal#applyTo(Policy)}).
 *
 * <p>Feed it upstream signals only. A local refusal is not evidence that anything upstream is
 * overloaded (it may only mean this limiter did its job), and tuning refill on local refusals admits
 * less work than a fixed refill. Nothing in Sluice adapts by default.
 *
 * <ul>
 *   <li>{@code propose(true)} (throttled): {@code value * decreaseFactor}, rounded down;
 *   <li>{@code propose(false)}: {@code value + increase};
 *   <li>every step moves at most {@code maxStep} and stays within {@code [min, max]}.
 * </ul>
 * Thread-safe.
 */
public final class AimdRefill {
  private final long min;
  private final long max;
  private final long increase;
  private final double decreaseFactor;
  private final long maxStep;
  private long value;

  /** One proposal: the value to use, the value before, and whether it changed. */
  public record Proposal(long value, long previous, boolean changed, boolean throttled) {
    /**
     * A copy of {@code policy} with this value as its refill rate: a token bucket's refill tokens or a
     * GCRA's rate. A new policy value; nothing is mutated.
     */
    public Policy applyTo(Policy policy) {
      Checks.notNull("policy", policy);
      Algorithm a = policy.algorithm();
      if (a instanceof Algorithm.TokenBucket tb) {
        return new Policy(policy.name(), new Algorithm.TokenBucket(tb.capacity(), value, tb.refillPeriodMicros()));
      }
      if (a instanceof Algorithm.Gcra g) {
        return new Policy(policy.name(), new Algorithm.Gcra(value, g.periodMicros(), g.burst()));
      }
      throw new IllegalArgumentException("policy '" + policy.name() + "' uses " + a.id()
          + ", which has no refill rate; a refill proposal applies to a token bucket or GCRA");
    }
  }

  private AimdRefill(Builder b) {
    this.min = b.min;
    this.max = b.max;
    this.increase = b.increase;
    this.decreaseFactor = b.decreaseFactor;
    this.maxStep = b.maxStep;
    this.value = b.initial;
  }

  /** Starts at {@code initial}, never below {@code min} nor above {@code max}. */
  public static Builder builder(long initial, long min, long max) {
    return new Builder(initial, min, max);
  }

  /** The current proposal's value. */
  public synchronized long value() {
    return value;
  }

  /** The next proposal after one upstream observation. */
  public synchronized Proposal propose(boolean upstreamThrottled) {
    long prev = value;
    long next;
    if (upstreamThrottled) {
      long target = (long) Math.floor(prev * decreaseFactor);
      long step = Math.min(maxStep, Math.max(1, prev - target));
      next = Math.max(min, prev - step);
    } else {
      next = Math.min(max, prev + Math.min(maxStep, increase));
    }
    value = next;
    return new Proposal(next, prev, next != prev, upstreamThrottled);
  }

  public static final class Builder {
    private final long initial;
    private final long min;
    private final long max;
    private long increase = 1;
    private double decreaseFactor = 0.5;
    private long maxStep = Long.MAX_VALUE;

    private Builder(long initial, long min, long max) {
      Checks.positive("min", min);
      Checks.positive("max", max);
      if (min > max) {
        throw new IllegalArgumentException("min " + min + " exceeds max " + max + "; min must be at most max");
      }
      if (initial < min || initial > max) {
        throw new IllegalArgumentException("initial " + initial + " is outside [" + min + ", " + max + "]; start within the bounds");
      }
      this.initial = initial;
      this.min = min;
      this.max = max;
    }

    /** Added per unthrottled observation (default 1). */
    public Builder increase(long increase) {
      this.increase = Checks.positive("increase", increase);
      return this;
    }

    /** Multiplied in per throttled observation (default 0.5); strictly between 0 and 1. */
    public Builder decreaseFactor(double factor) {
      if (!(factor > 0 && factor < 1)) {
        throw new IllegalArgumentException("decreaseFactor " + factor + " is not strictly between 0 and 1; use e.g. 0.5 to halve");
      }
      this.decreaseFactor = factor;
      return this;
    }

    /** The most one proposal may move the value, either way (default unbounded). */
    public Builder maxStep(long maxStep) {
      this.maxStep = Checks.positive("maxStep", maxStep);
      return this;
    }

    public AimdRefill build() {
      return new AimdRefill(this);
    }
  }
}

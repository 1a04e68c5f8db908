package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.compose.Composition;
import dev.sluice.internal.Keys;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Lets a {@code Composition} (one key and one permit count for all its legs) charge each of several
 * {@link RateLimited} annotations its own key and permits: the composition is asked about one
 * composed key that carries every leg's permits and key, joined so that no key can forge another's
 * part ({@link Keys#join}), and each leg reads its own part back. A settlement, where the composition gives
 * every leg one actual, likewise gives each leg its own ({@link #settle}).
 */
final class ComposedKey {
  /** A leg's actual that keeps its reservation: it settles at what it reserved (no store call). */
  static final long KEEP = -1;
  /** The legs' own actuals while {@link #settle} runs (the composition settles its legs on the caller's thread). */
  private static final ThreadLocal<long[]> ACTUALS = new ThreadLocal<>();

  private ComposedKey() {}

  /**
   * Settles a composed ticket, every leg at its own actual ({@link #KEEP}: at its reservation), each
   * through its own ticket as {@code Composition.settle} does it.
   */
  static Settlement settle(Composition composition, Ticket composed, long[] actuals) {
    ACTUALS.set(actuals);
    try {
      return composition.settle(composed, 0); // 0 only passes the composition's range check; each leg reads its own
    } finally {
      ACTUALS.remove();
    }
  }

  /** Every leg's permits and key, in order, joined by the one rule of composed keys ({@link Keys#join}). */
  static String of(String[] keys, long[] permits) {
    List<String> parts = new ArrayList<>(2 * keys.length);
    for (int i = 0; i < keys.length; i++) {
      parts.add(Long.toString(permits[i]));
      parts.add(keys[i]);
    }
    return Keys.join(parts);
  }

  static String key(String composed, int index) {
    return Keys.split(composed).get(2 * index + 1);
  }

  static long permits(String composed, int index) {
    return Long.parseLong(Keys.split(composed).get(2 * index));
  }

  /** One annotation's limiter as a leg of the composition: charges its own part of the composed key. */
  static final class Leg implements RateLimiter {
    private final RateLimiter target;
    private final int index;

    Leg(RateLimiter target, int index) {
      this.target = target;
      this.index = index;
    }

    @Override public Policy policy() {
      return target.policy();
    }

    @Override public Decision tryAcquire(String key, long permits, Policy policy) {
      return target.tryAcquire(key(key, index), permits(key, index) * permits, target.policy());
    }

    @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
      return target.tryAcquireAsync(key(key, index), permits(key, index) * permits, target.policy());
    }

    @Override public Decision peek(String key, Policy policy) {
      return target.peek(key(key, index), target.policy());
    }

    @Override public Refund refund(Ticket ticket) {
      return target.refund(ticket);
    }

    @Override public Settlement settle(Ticket ticket, long actualPermits) {
      long[] actuals = ACTUALS.get();
      long actual = actuals == null ? actualPermits : actuals[index];
      return target.settle(ticket, actual == KEEP ? ticket.permits() : actual);
    }

    @Override public void reset(String key, Policy policy) {
      target.reset(key(key, index), target.policy());
    }
  }
}

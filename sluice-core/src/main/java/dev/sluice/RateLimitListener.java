package dev.sluice;

/**
 * Told about decisions, refusals, refunds, settlements and store calls. Every method has a no-op default, so a
 * listener implements only what it needs. Limiters call listeners through {@link #guarded}: a
 * listener that throws is logged and never breaks a decision.
 *
 * <p>Keys are personal data more often than not (IP addresses, account ids), so a listener receives
 * the key only when the user opts in ({@code includeKeys}); otherwise the key argument is null.
 */
public interface RateLimitListener {

  /** No-op listener. */
  RateLimitListener NONE = new RateLimitListener() {};

  /**
   * Every decision, allowed or refused: each acquire; a peek charges nothing and is not reported.
   * {@code key} is null unless keys were opted in.
   */
  default void onDecision(Decision decision, String key) {}

  /** Every refused decision (called after {@link #onDecision}). {@code key} is null unless keys were opted in. */
  default void onRefusal(Decision decision, String key) {}

  /** A refund and what it did. */
  default void onRefund(Policy policy, Refund result) {}

  /** A settlement ({@link RateLimiter#settle}) and what it did. */
  default void onSettle(Policy policy, Settlement result) {}

  /**
   * One call to a shared store (Redis round trip, SQL statement, store SPI operation): its latency
   * and, if it failed, the error.
   */
  default void onStoreCall(Policy policy, long latencyNanos, Throwable error) {}

  /**
   * Wraps {@code listener} so that its exceptions are logged and swallowed, and so that it receives
   * keys only when {@code includeKeys} is true.
   */
  static RateLimitListener guarded(RateLimitListener listener, boolean includeKeys) {
    if (listener == null || listener == NONE) {
      return NONE;
    }
    return new GuardedListener(listener, includeKeys);
  }

  /**
   * Tells each of {@code listeners} in turn, each {@link #guarded}: one that throws is logged and the
   * others are still told. {@link #NONE} when there are none.
   */
  static RateLimitListener all(java.util.List<? extends RateLimitListener> listeners, boolean includeKeys) {
    java.util.List<RateLimitListener> each = new java.util.ArrayList<>();
    for (RateLimitListener l : listeners) {
      RateLimitListener g = guarded(l, includeKeys);
      if (g != NONE) {
        each.add(g);
      }
    }
    return each.isEmpty() ? NONE : each.size() == 1 ? each.get(0) : new AllListeners(java.util.List.copyOf(each));
  }
}

/** {@link RateLimitListener#all}: each guarded listener in turn. */
final class AllListeners implements RateLimitListener {
  private final java.util.List<RateLimitListener> each;

  AllListeners(java.util.List<RateLimitListener> each) {
    this.each = each;
  }

  @Override public void onDecision(Decision decision, String key) {
    for (RateLimitListener l : each) {
      l.onDecision(decision, key);
    }
  }

  @Override public void onRefusal(Decision decision, String key) {
    for (RateLimitListener l : each) {
      l.onRefusal(decision, key);
    }
  }

  @Override public void onRefund(Policy policy, Refund result) {
    for (RateLimitListener l : each) {
      l.onRefund(policy, result);
    }
  }

  @Override public void onSettle(Policy policy, Settlement result) {
    for (RateLimitListener l : each) {
      l.onSettle(policy, result);
    }
  }

  @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
    for (RateLimitListener l : each) {
      l.onStoreCall(policy, latencyNanos, error);
    }
  }
}

final class GuardedListener implements RateLimitListener {
  private static final System.Logger LOG = System.getLogger(RateLimitListener.class.getName());
  private final RateLimitListener delegate;
  private final boolean includeKeys;

  GuardedListener(RateLimitListener delegate, boolean includeKeys) {
    this.delegate = delegate;
    this.includeKeys = includeKeys;
  }

  @Override public void onDecision(Decision decision, String key) {
    try {
      delegate.onDecision(decision, includeKeys ? key : null);
      if (!decision.allowed()) {
        delegate.onRefusal(decision, includeKeys ? key : null);
      }
    } catch (Throwable t) {
      log(t);
    }
  }

  @Override public void onRefusal(Decision decision, String key) {
    // Delivered by onDecision, so that a limiter makes one call per decision.
  }

  @Override public void onRefund(Policy policy, Refund result) {
    try {
      delegate.onRefund(policy, result);
    } catch (Throwable t) {
      log(t);
    }
  }

  @Override public void onSettle(Policy policy, Settlement result) {
    try {
      delegate.onSettle(policy, result);
    } catch (Throwable t) {
      log(t);
    }
  }

  @Override public void onStoreCall(Policy policy, long latencyNanos, Throwable error) {
    try {
      delegate.onStoreCall(policy, latencyNanos, error);
    } catch (Throwable t) {
      log(t);
    }
  }

  private static void log(Throwable t) {
    LOG.log(System.Logger.Level.WARNING, "rate-limit listener threw; ignored", t);
  }
}

package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import java.util.List;
import java.util.function.IntFunction;

/** One set of legs: a composition's legs, or one slot's of a keyed composition. */
final class LegSet {
  final RateLimiter[] legs;
  final Policy[] policies;
  /** The leg as a clocked limiter on the composition's ticker, or null. */
  final ClockedRateLimiter[] clocked;
  final int clockedCount;
  /** The key every leg is asked about (a keyed composition's slot), or null to pass the caller's key. */
  final String slotKey;
  /** Charge order: legs that cannot be pre-flighted first, so a refusal there costs no compensation. */
  final int[] order;
  final long maxPermits;
  final String maxPermitsPolicy;

  LegSet(RateLimiter[] legs, Ticker ticker, String slotKey) {
    this.legs = legs;
    this.slotKey = slotKey;
    int n = legs.length;
    policies = new Policy[n];
    clocked = new ClockedRateLimiter[n];
    order = new int[n];
    long max = Long.MAX_VALUE;
    String maxName = null;
    int c = 0;
    for (int i = 0; i < n; i++) {
      policies[i] = Checks.notNull("policy of leg " + i, legs[i].policy());
      if (legs[i] instanceof ClockedRateLimiter cl) {
        if (cl.ticker() != ticker) {
          throw new IllegalStateException("leg " + i + " (policy '" + policies[i].name() + "') reads another ticker than the "
              + "composition; a composed decision reads one clock: build the legs on one ticker and pass it to the composition");
        }
        clocked[i] = cl;
        c++;
      }
      if (policies[i].limit() < max) {
        max = policies[i].limit();
        maxName = policies[i].name();
      }
    }
    clockedCount = c;
    int j = 0;
    for (int i = 0; i < n; i++) {
      if (clocked[i] == null) {
        order[j++] = i;
      }
    }
    for (int i = 0; i < n; i++) {
      if (clocked[i] != null) {
        order[j++] = i;
      }
    }
    maxPermits = max;
    maxPermitsPolicy = maxName;
  }

  /** The legs of {@code slot} of a keyed composition, built by its leg factories. */
  static LegSet ofSlot(List<IntFunction<? extends RateLimiter>> factories, int slot, int slots, Ticker ticker) {
    RateLimiter[] legs = new RateLimiter[factories.size()];
    for (int i = 0; i < legs.length; i++) {
      legs[i] = factories.get(i).apply(slot);
      if (legs[i] == null) {
        throw new IllegalStateException("leg factory " + i + " returned null for slot " + slot);
      }
    }
    return new LegSet(legs, ticker, slot == slots ? "slot:default" : "slot:" + slot);
  }

  void checkPermits(long permits) {
    if (permits < 1 || permits > maxPermits) {
      Checks.permits(permits, maxPermits, maxPermitsPolicy);
    }
  }

  String legKey(String key) {
    return slotKey != null ? slotKey : key;
  }

  /** Forgets {@code key}'s state (the slot key's, for a slot) on every leg. */
  void reset(String key) {
    String k = legKey(key);
    for (int i = 0; i < legs.length; i++) {
      legs[i].reset(k, policies[i]);
    }
  }
}

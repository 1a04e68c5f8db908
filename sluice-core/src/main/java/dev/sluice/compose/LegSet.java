package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.internal.Checks;
import java.util.List;
import java.util.function.IntFunction;

/**
 * One set of legs: a composition's legs, one slot's of a keyed composition (every leg asked about one
 * key for one permit count), or the charges of one {@link AllOf#charge} call (each leg its own key and
 * permits).
 */
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
  /** Each leg's own key and permits (the charges of {@link AllOf#charge}), or null: the caller's. */
  private final String[] keys;
  private final long[] permits;

  LegSet(RateLimiter[] legs, Ticker ticker, String slotKey) {
    this(legs, null, null, null, ticker, slotKey);
  }

  /**
   * The legs of {@code charges}: each its own limiter, key, permits and policy. A leg is clocked when
   * it reads {@code ticker} (the first clocked leg's); a leg on another clock decides on its own.
   */
  static LegSet of(List<AllOf.Charge> charges, Ticker ticker) {
    int n = charges.size();
    RateLimiter[] legs = new RateLimiter[n];
    Policy[] policies = new Policy[n];
    String[] keys = new String[n];
    long[] permits = new long[n];
    for (int i = 0; i < n; i++) {
      AllOf.Charge c = Checks.notNull("charge " + i, charges.get(i));
      legs[i] = c.limiter();
      policies[i] = c.policy();
      keys[i] = c.key();
      permits[i] = c.permits();
    }
    return new LegSet(legs, policies, keys, permits, ticker, null);
  }

  private LegSet(RateLimiter[] legs, Policy[] ownPolicies, String[] keys, long[] permits, Ticker ticker, String slotKey) {
    this.legs = legs;
    this.slotKey = slotKey;
    this.keys = keys;
    this.permits = permits;
    int n = legs.length;
    policies = ownPolicies != null ? ownPolicies : new Policy[n];
    clocked = new ClockedRateLimiter[n];
    order = new int[n];
    long max = Long.MAX_VALUE;
    String maxName = null;
    int c = 0;
    for (int i = 0; i < n; i++) {
      if (ownPolicies == null) {
        policies[i] = Checks.notNull("policy of leg " + i, legs[i].policy());
      }
      // a charge on another clock than the first clocked one's is asked on its own clock, not pre-flighted
      if (legs[i] instanceof ClockedRateLimiter cl && (keys == null || cl.ticker() == ticker)) {
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

  /** The key leg {@code i} is asked about: its charge's, else {@code key} ({@link #legKey}'d already). */
  String key(int i, String key) {
    return keys != null ? keys[i] : key;
  }

  /** The permits leg {@code i} is charged: its charge's, else the caller's. */
  long permits(int i, long permits) {
    return this.permits != null ? this.permits[i] : permits;
  }

  /** Forgets {@code key}'s state (the slot key's, for a slot) on every leg. */
  void reset(String key) {
    String k = legKey(key);
    for (int i = 0; i < legs.length; i++) {
      legs[i].reset(k, policies[i]);
    }
  }
}

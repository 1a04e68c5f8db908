package dev.sluice.memory;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;

/**
 * Per-identity limit plus a global ceiling (caisson's per-IP and global buckets): every call is
 * charged to its caller's key under the identity policy and to one fixed key under the ceiling
 * policy, whoever the caller claims to be. A spoofed, rotated or collapsed identity (every client
 * behind one NAT, or an attacker inventing keys) is still held to the ceiling.
 *
 * <p>Both legs are decided at one clock reading. The identity leg goes first; if the ceiling then
 * refuses, the identity charge is refunded, so a refused call leaves no leg charged. The decision
 * returned is the identity leg's when both allow (its ticket refunds the identity leg only: the
 * ceiling charge stays, which errs on the strict side) and the ceiling's refusal otherwise.
 */
public final class CeilingRateLimiter implements ClockedRateLimiter {
  /** The key every call is charged to under the ceiling policy. */
  public static final String CEILING_KEY = "*";

  private final ClockedRateLimiter limiter;
  private final Policy ceiling;

  private CeilingRateLimiter(ClockedRateLimiter limiter, Policy ceiling) {
    this.limiter = limiter;
    this.ceiling = ceiling;
  }

  /**
   * Limits each key by {@code limiter}'s policy and all keys together by {@code ceiling}. The two
   * policies must have different names (they share the limiter's store).
   */
  public static CeilingRateLimiter of(ClockedRateLimiter limiter, Policy ceiling) {
    Checks.notNull("limiter", limiter);
    Checks.notNull("ceiling", ceiling);
    if (ceiling.name().equals(limiter.policy().name())) {
      throw new IllegalArgumentException("ceiling policy name '" + ceiling.name()
          + "' equals the identity policy's; give the ceiling its own name so the budgets stay apart");
    }
    return new CeilingRateLimiter(limiter, ceiling);
  }

  public Policy ceiling() {
    return ceiling;
  }

  @Override public Policy policy() {
    return limiter.policy();
  }

  @Override public Ticker ticker() {
    return limiter.ticker();
  }

  @Override public Decision tryAcquire(String key, long permits, Policy p) {
    return tryAcquireAt(key, permits, p, limiter.ticker().nowMicros());
  }

  @Override public Decision tryAcquireAt(String key, long permits, Policy p, long now) {
    Checks.permits(permits, ceiling.limit(), ceiling.name());
    Decision identity = limiter.tryAcquireAt(key, permits, p, now);
    if (!identity.allowed()) {
      return identity;
    }
    Decision global = limiter.tryAcquireAt(CEILING_KEY, permits, ceiling, now);
    if (!global.allowed()) {
      identity.ticket().ifPresent(t -> limiter.refundAt(t, now));
      return global;
    }
    return identity;
  }

  @Override public Decision peek(String key, Policy p) {
    return peekAt(key, p, limiter.ticker().nowMicros());
  }

  @Override public Decision peekAt(String key, Policy p, long now) {
    Decision identity = limiter.peekAt(key, p, now);
    Decision global = limiter.peekAt(CEILING_KEY, ceiling, now);
    return !global.allowed() || global.remaining() < identity.remaining() && identity.allowed() ? global : identity;
  }

  @Override public Refund refund(Ticket ticket) {
    return limiter.refund(ticket);
  }

  @Override public Refund refundAt(Ticket ticket, long now) {
    return limiter.refundAt(ticket, now);
  }

  @Override public void reset(String key, Policy p) {
    limiter.reset(key, p);
  }
}

package dev.sluice.server;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.model.SlidingLogState;
import java.util.HashMap;
import java.util.Map;

/**
 * Stand-in for the memory tier until {@code dev.sluice.memory.MemoryRateLimiter} lands on main: the
 * reference model behind one lock, unbounded. Removed when the memory tier is wired in.
 */
final class InterimMemoryLimiter implements RateLimiter {
  private final Policy policy;
  private final Ticker ticker;
  private final Map<String, Object> states = new HashMap<>();
  private final Outcome out = new Outcome();

  InterimMemoryLimiter(Policy policy, Ticker ticker) {
    this.policy = policy;
    this.ticker = ticker;
  }

  @Override public Policy policy() {
    return policy;
  }

  @Override public synchronized Decision tryAcquire(String key, long permits, Policy p) {
    Checks.key(key, 512);
    Checks.permits(permits, p.limit(), p.name());
    long now = ticker.nowMicros();
    Object st = state(key, p);
    if (st instanceof SlidingLogState log) {
      log.acquire((Algorithm.SlidingLog) p.algorithm(), now, permits, out);
    } else {
      ReferenceModel.acquire(p.algorithm(), (long[]) st, now, permits, out);
    }
    return decision(p, key, permits);
  }

  @Override public synchronized Decision peek(String key, Policy p) {
    Checks.key(key, 512);
    long now = ticker.nowMicros();
    Object st = state(key, p);
    if (st instanceof SlidingLogState log) {
      log.peek((Algorithm.SlidingLog) p.algorithm(), now, out);
    } else {
      ReferenceModel.peek(p.algorithm(), (long[]) st, now, out);
    }
    return out.allowed() ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  @Override public synchronized Refund refund(Ticket t) {
    if (!t.spend()) {
      return Refund.NO_EFFECT;
    }
    Policy p = t.policy();
    Object st = state(t.key(), p);
    long now = ticker.nowMicros();
    if (st instanceof SlidingLogState log) {
      log.refund((Algorithm.SlidingLog) p.algorithm(), now, t.permits(), t.stamp(), out);
    } else {
      ReferenceModel.refund(p.algorithm(), (long[]) st, now, t.permits(), t.stamp(), out);
    }
    return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
  }

  @Override public synchronized void reset(String key, Policy p) {
    states.remove(p.name() + '\0' + key);
  }

  private Object state(String key, Policy p) {
    return states.computeIfAbsent(p.name() + '\0' + key,
        k -> p.algorithm() instanceof Algorithm.SlidingLog ? new SlidingLogState() : new long[ReferenceModel.STATE_SIZE]);
  }

  private Decision decision(Policy p, String key, long permits) {
    if (out.allowed()) {
      return Decision.allowed(p, out.remaining(), out.resetAt(), new Ticket(p, key, permits, out.stamp()));
    }
    return Decision.refused(p, out.invalidClock() ? Reason.INVALID_CLOCK : Reason.LIMIT_EXCEEDED,
        out.remaining(), out.resetAt(), out.retryAfter());
  }
}

package dev.sluice.tck;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticket;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.model.SlidingLogState;
import java.util.HashMap;
import java.util.Map;

/**
 * The oracle of the conformance kit: the reference model with plain maps and no bounds, deciding at
 * the instant it is given. Single-threaded. Its decisions are what every backend must produce.
 */
public final class ReferenceLimiter {
  private final Map<Policy, Map<String, Object>> states = new HashMap<>();

  public Decision acquire(Policy p, String key, long permits, long now) {
    Outcome out = new Outcome();
    Object st = state(p, key);
    if (st instanceof SlidingLogState log) {
      log.acquire((Algorithm.SlidingLog) p.algorithm(), now, permits, out);
    } else {
      ReferenceModel.acquire(p.algorithm(), (long[]) st, now, permits, out);
    }
    if (out.invalidClock()) {
      return Decision.refused(p, Reason.INVALID_CLOCK, 0, 0, 0);
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), new Ticket(p, key, permits, out.stamp()))
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  public Decision peek(Policy p, String key, long now) {
    Outcome out = new Outcome();
    Object st = state(p, key);
    if (st instanceof SlidingLogState log) {
      log.peek((Algorithm.SlidingLog) p.algorithm(), now, out);
    } else {
      ReferenceModel.peek(p.algorithm(), (long[]) st, now, out);
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  public Refund refund(Ticket t, long now) {
    Outcome out = new Outcome();
    Object st = state(t.policy(), t.key());
    if (st instanceof SlidingLogState log) {
      log.refund((Algorithm.SlidingLog) t.policy().algorithm(), now, t.permits(), t.stamp(), out);
    } else {
      ReferenceModel.refund(t.policy().algorithm(), (long[]) st, now, t.permits(), t.stamp(), out);
    }
    return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
  }

  public void reset(Policy p, String key) {
    Map<String, Object> m = states.get(p);
    if (m != null) {
      m.remove(key);
    }
  }

  private Object state(Policy p, String key) {
    return states.computeIfAbsent(p, x -> new HashMap<>()).computeIfAbsent(key,
        k -> p.algorithm() instanceof Algorithm.SlidingLog ? new SlidingLogState() : new long[ReferenceModel.STATE_SIZE]);
  }
}

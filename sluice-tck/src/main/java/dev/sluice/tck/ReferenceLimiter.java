package dev.sluice.tck;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.model.SlidingLogState;
import java.util.HashMap;
import java.util.Map;

/**
 * The oracle of the conformance kit: the reference model with plain maps and no bounds, deciding at
 * the instant it is given. Single-threaded. Its decisions are what every backend must produce.
 *
 * <p>A budget is the policy's name and the key. A call under the same name with other numbers
 * decides the stored state with its own numbers; a call under the same name with another algorithm
 * finds a state of another shape, which counts as absent, and its first write replaces it.
 */
public final class ReferenceLimiter {
  private final Map<String, Map<String, Entry>> states = new HashMap<>();
  private final Ticket.Issuer issuer = new Ticket.Issuer();

  /** A key's state and the algorithm that wrote it. */
  private static final class Entry {
    Class<?> algorithm;
    Object state;
  }

  public Decision acquire(Policy p, String key, long permits, long now) {
    Outcome out = new Outcome();
    Entry e = entry(p, key);
    Object st = e.algorithm == p.algorithm().getClass() ? e.state : fresh(p);
    if (st instanceof SlidingLogState log) {
      log.acquire((Algorithm.SlidingLog) p.algorithm(), now, permits, out);
    } else {
      ReferenceModel.acquire(p.algorithm(), (long[]) st, now, permits, out);
    }
    if (out.wrote()) {
      e.algorithm = p.algorithm().getClass();
      e.state = st;
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), issuer.issue(p, key, permits, out.stamp()))
        : out.refusal(p);
  }

  public Decision peek(Policy p, String key, long now) {
    Outcome out = new Outcome();
    Entry e = entry(p, key);
    Object st = e.algorithm == p.algorithm().getClass() ? e.state : fresh(p);
    if (st instanceof SlidingLogState log) {
      log.peek((Algorithm.SlidingLog) p.algorithm(), now, out);
    } else {
      ReferenceModel.peek(p.algorithm(), (long[]) st, now, out);
    }
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : out.refusal(p);
  }

  /** A refund of a ticket this oracle issued, once, within its life; any other ticket is {@link Refund#NO_EFFECT}. */
  public Refund refund(Ticket t, long now) {
    if (t == null || !ReferenceModel.ticketLive(t.policy().algorithm(), t.stamp(), now) || !issuer.claim(t)) {
      return Refund.NO_EFFECT;
    }
    Outcome out = new Outcome();
    Entry e = entry(t.policy(), t.key());
    if (e.algorithm != t.policy().algorithm().getClass()) {
      return Refund.NO_EFFECT; // another algorithm wrote the key since: that state says nothing of this ticket
    }
    Object st = e.state;
    if (st instanceof SlidingLogState log) {
      log.refund((Algorithm.SlidingLog) t.policy().algorithm(), now, t.permits(), t.stamp(), out);
    } else {
      ReferenceModel.refund(t.policy().algorithm(), (long[]) st, now, t.permits(), t.stamp(), out);
    }
    return out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT;
  }

  /**
   * A settlement of a ticket this oracle issued, once, at {@code actual} (already valid: 0..limit);
   * any other ticket is {@link Settlement#NO_EFFECT}. A key another algorithm wrote since counts as
   * absent: an overrun opens a fresh state there, which replaces the other's.
   */
  public Settlement settle(Ticket t, long actual, long now) {
    if (t == null || !ReferenceModel.ticketLive(t.policy().algorithm(), t.stamp(), now) || !issuer.claim(t)) {
      return Settlement.NO_EFFECT;
    }
    Policy p = t.policy();
    long delta = actual - Math.min(t.permits(), p.limit());
    if (delta == 0) {
      return Settlement.NO_EFFECT;
    }
    Outcome out = new Outcome();
    Entry e = entry(p, t.key());
    Object st = e.algorithm == p.algorithm().getClass() ? e.state : fresh(p);
    if (st instanceof SlidingLogState log) {
      log.settle((Algorithm.SlidingLog) p.algorithm(), now, delta, t.stamp(), out);
    } else {
      ReferenceModel.settle(p.algorithm(), (long[]) st, now, delta, t.stamp(), out);
    }
    if (out.wrote()) {
      e.algorithm = p.algorithm().getClass();
      e.state = st;
    }
    return out.wrote() ? Settlement.APPLIED : Settlement.NO_EFFECT;
  }

  public void reset(Policy p, String key) {
    Map<String, Entry> m = states.get(p.name());
    if (m != null) {
      m.remove(key);
    }
  }

  private Entry entry(Policy p, String key) {
    return states.computeIfAbsent(p.name(), x -> new HashMap<>()).computeIfAbsent(key, k -> {
      Entry e = new Entry();
      e.algorithm = p.algorithm().getClass();
      e.state = fresh(p);
      return e;
    });
  }

  private static Object fresh(Policy p) {
    return p.algorithm() instanceof Algorithm.SlidingLog ? new SlidingLogState() : new long[ReferenceModel.STATE_SIZE];
  }
}

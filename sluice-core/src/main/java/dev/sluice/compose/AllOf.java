package dev.sluice.compose;

import dev.sluice.ClockedRateLimiter;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The all-of decision over one {@link LegSet}: pre-flight the clocked legs, charge in order,
 * compensate every leg charged on a call that is refused or throws, and combine the allowed legs
 * into one decision with one composed ticket; and that ticket's refund and settlement over every
 * part it charged. The shared state, when there is one, is asked first by {@link SharedFirst}, which
 * hands its decision in here so it is compensated and ticketed with the legs.
 */
final class AllOf {
  private final CompositionCounters counters;
  /** The wait of a refusal no store answered (a leg threw, the failure mode refused): the mode's retryAfter. */
  private final long failureRetryMicros;
  /** The shared state, to compensate, refund and settle its part of a call; null without one. */
  private final SharedFirst shared;
  private final TicketBook book = new TicketBook();
  private final Ticket.Issuer issuer = new Ticket.Issuer();

  AllOf(CompositionCounters counters, long failureRetryMicros, SharedFirst shared) {
    this.counters = counters;
    this.failureRetryMicros = failureRetryMicros;
    this.shared = shared;
  }

  /** Charges every leg of {@code s}, or none; {@code sd} is the shared state's allowance already charged, or null. */
  Decision acquire(LegSet s, String key, long permits, long now, Decision sd) {
    final int n = s.legs.length;
    final String k = s.legKey(key);
    Decision[] got = new Decision[n];
    int current = -1;
    try {
      if (n > 1 && s.clockedCount > 0) {
        Decision refusal = null;
        for (int i = 0; i < n; i++) {
          ClockedRateLimiter c = s.clocked[i];
          if (c == null) {
            continue;
          }
          current = i;
          Decision p = c.peekAt(k, s.policies[i], now);
          if (p.allowed() && p.remaining() >= permits) {
            continue;
          }
          // Predicted to refuse. A refused peek of one permit is exactly the refused acquire; otherwise
          // ask for real (a refused acquire writes nothing) to get the retry-after of these permits.
          Decision r = permits == 1 && !p.allowed() ? p : c.tryAcquireAt(k, permits, s.policies[i], now);
          if (r.allowed()) {
            got[i] = r; // freed in between: charged, kept or refunded below
          } else {
            refusal = refusal == null ? r : mostRestrictive(refusal, r);
          }
        }
        if (refusal != null) {
          compensate(s, got, sd, now);
          return refusal;
        }
      }
      for (int j = 0; j < n; j++) {
        int i = s.order[j];
        if (got[i] != null) {
          continue;
        }
        current = i;
        Decision d = s.clocked[i] != null
            ? s.clocked[i].tryAcquireAt(k, permits, s.policies[i], now)
            : s.legs[i].tryAcquire(k, permits, s.policies[i]);
        if (!d.allowed()) {
          compensate(s, got, sd, now);
          return d;
        }
        got[i] = d;
      }
    } catch (IllegalArgumentException e) {
      compensate(s, got, sd, now);
      throw e;
    } catch (Throwable e) {
      // Whatever was thrown (an Error, a checked exception thrown sneakily): no leg stays charged.
      compensate(s, got, sd, now);
      return legError(s, current, e, now);
    }
    return combineAllowed(s, key, permits, got, sd);
  }

  /**
   * The most restrictive of {@code best} (the shared state's answer, or null) and every leg's peek;
   * marked {@link Path#FALLBACK} when {@code degraded}.
   */
  Decision peek(LegSet s, String key, long now, Decision best, boolean degraded) {
    String k = s.legKey(key);
    for (int i = 0; i < s.legs.length; i++) {
      Decision d;
      try {
        d = s.clocked[i] != null ? s.clocked[i].peekAt(k, s.policies[i], now) : s.legs[i].peek(k, s.policies[i]);
      } catch (IllegalArgumentException e) {
        throw e;
      } catch (Throwable e) {
        return legError(s, i, e, now);
      }
      best = best == null ? d : mostRestrictive(best, d);
    }
    return degraded ? best.withPath(Path.FALLBACK) : best;
  }

  private Decision combineAllowed(LegSet s, String key, long permits, Decision[] got, Decision sd) {
    Decision best = sd;
    Ticket[] tickets = null;
    Reason reason = Reason.WITHIN_LIMIT;
    Path path = Path.PRIMARY;
    for (int i = 0; i < got.length; i++) {
      Decision d = got[i];
      best = best == null ? d : mostRestrictive(best, d);
      if (d.reason().isFailure() && reason == Reason.WITHIN_LIMIT) {
        reason = d.reason();
      }
      if (d.path().ordinal() > path.ordinal() && d.path() != Path.NEAR_CACHE) {
        path = d.path();
      }
      Optional<Ticket> t = d.ticket();
      if (t.isPresent()) {
        if (tickets == null) {
          tickets = new Ticket[got.length];
        }
        tickets[i] = t.get();
      }
    }
    Ticket sharedTicket = sd == null ? null : sd.ticket().orElse(null);
    Ticket composed = null;
    if (tickets != null || sharedTicket != null) {
      composed = issuer.issue(best.policy(), key == null ? "" : key, permits, 0);
      book.put(composed, new Charges(s, tickets == null ? new Ticket[0] : tickets, sharedTicket));
    }
    return Decision.builder(best.policy()).allowed(reason).path(path)
        .remaining(best.remaining()).resetAtMicros(best.resetAtMicros()).ticket(composed).build();
  }

  /**
   * Refunds every leg charged on this call. A refund that throws an {@link Error} counts as failed;
   * the other legs are refunded all the same, and the first such Error is rethrown at the end.
   */
  private void compensate(LegSet s, Decision[] got, Decision sd, long now) {
    Error error = null;
    for (int i = 0; i < got.length; i++) {
      Decision d = got[i];
      if (d != null && d.ticket().isPresent()) {
        final int leg = i;
        error = compensated(() -> refundLeg(s, leg, d.ticket().get(), now), error);
      }
    }
    if (sd != null && sd.ticket().isPresent()) {
      error = compensated(() -> shared.refund(sd.ticket().get()), error);
    }
    if (error != null) {
      throw error;
    }
  }

  /** One compensating refund, counted; returns the first Error seen so far. */
  private Error compensated(Supplier<Refund> refund, Error error) {
    counters.compensations.increment();
    Refund r;
    try {
      r = refund.get();
    } catch (Error e) {
      error = error == null ? e : error;
      r = Refund.FAILED;
    }
    if (r == Refund.FAILED || r == Refund.UNKNOWN) {
      counters.failedCompensations.increment();
    }
    return error;
  }

  /**
   * Refunds every leg (and the shared state) a composed ticket charged, each in the window it was
   * counted in; see {@link Composition#refundAt}. Null for a null, spent or foreign ticket (a foreign
   * one stays refundable where it belongs). Never throws but an {@link Error}.
   */
  Refund refund(Ticket ticket, long now) {
    Charges c = claim(ticket);
    return c == null ? null : eachPart(ticket, c, Refund.APPLIED, Refund.FAILED, Refund.UNKNOWN, Refund.NO_EFFECT,
        (i, t) -> refundLeg(c.set(), i, t, now), shared == null ? null : shared::refund);
  }

  /**
   * Settles every part a composed ticket charged at {@code actualPermits}; see
   * {@link Composition#settleAt}. Null for a null, spent or foreign ticket.
   */
  Settlement settle(Ticket ticket, long actualPermits, long now) {
    if (ticket != null) {
      Checks.actual(actualPermits, ticket.policy().limit(), ticket.policy().name());
    }
    Charges c = claim(ticket);
    return c == null ? null : eachPart(ticket, c, Settlement.APPLIED, Settlement.FAILED, Settlement.UNKNOWN, Settlement.NO_EFFECT,
        (i, t) -> settleLeg(c.set(), i, t, Math.min(actualPermits, t.policy().limit()), now),
        shared == null ? null : t -> shared.settle(t, Math.min(actualPermits, t.policy().limit())));
  }

  /**
   * Applies {@code leg} to every leg ticket and {@code sharedPart} to the shared ticket of {@code c}.
   * The composed answer: {@code unknown} when any part's outcome is unknown, else {@code failed} when
   * any part failed, else {@code applied} when any part applied, else {@code none}. The parts that
   * failed or whose outcome is unknown stay booked under the composed ticket, which is released: a
   * retry spends only those, each the one application or no effect (a leg's store keeps its spent
   * record), and never a part that already answered.
   */
  private <R> R eachPart(Ticket composed, Charges c, R applied, R failed, R unknown, R none,
      BiFunction<Integer, Ticket, R> leg, Function<Ticket, R> sharedPart) {
    boolean anyApplied = false;
    boolean anyFailed = false;
    boolean anyUnknown = false;
    Ticket[] retry = null;
    for (int i = 0; i < c.legTickets().length; i++) {
      Ticket t = c.legTickets()[i];
      if (t != null) {
        R r = leg.apply(i, t);
        anyApplied |= r == applied;
        anyFailed |= r == failed;
        anyUnknown |= r == unknown;
        if (r == failed || r == unknown) {
          if (retry == null) {
            retry = new Ticket[c.legTickets().length];
          }
          retry[i] = t;
        }
      }
    }
    Ticket sharedRetry = null;
    if (c.sharedTicket() != null) {
      R r = sharedPart.apply(c.sharedTicket());
      anyApplied |= r == applied;
      anyFailed |= r == failed;
      anyUnknown |= r == unknown;
      sharedRetry = r == failed || r == unknown ? c.sharedTicket() : null;
    }
    if (retry != null || sharedRetry != null) {
      book.put(composed, new Charges(c.set(), retry == null ? new Ticket[0] : retry, sharedRetry));
      issuer.release(composed);
    }
    return anyUnknown ? unknown : anyFailed ? failed : anyApplied ? applied : none;
  }

  /** Composed tickets whose charges are still kept (tests). */
  int bookedTickets() {
    return book.size();
  }

  /** What {@code ticket} charged, claimed once; null when it is null, spent or not this composition's. */
  private Charges claim(Ticket ticket) {
    return issuer.claim(ticket) ? book.remove(ticket) : null;
  }

  /** Never throws but an {@link Error}, after counting nothing: the caller counts a failed refund. */
  private Refund refundLeg(LegSet s, int i, Ticket t, long now) {
    try {
      return s.clocked[i] != null ? s.clocked[i].refundAt(t, now) : s.legs[i].refund(t);
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      counters.warn("a leg's refund threw; that leg stays stricter until its window rolls", e);
      return Refund.FAILED;
    }
  }

  /** Never throws but an {@link Error}: a leg that throws counts as a failed settlement. */
  private Settlement settleLeg(LegSet s, int i, Ticket t, long actual, long now) {
    try {
      return s.clocked[i] != null ? s.clocked[i].settleAt(t, actual, now) : s.legs[i].settle(t, actual);
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      counters.warn("a leg's settlement threw; its reservation stays the charge", e);
      return Settlement.FAILED;
    }
  }

  /**
   * A leg threw {@code e} (the legs charged before it are already refunded): counted in legErrors; an
   * {@link Error} is rethrown, anything else refuses the call.
   */
  private Decision legError(LegSet s, int i, Throwable e, long now) {
    counters.legErrors.increment();
    if (e instanceof Error err) {
      throw err;
    }
    counters.warn("a composition leg threw; the call is refused (counted in legErrors)", e);
    return failure(s.policies[Math.max(0, i)], Reason.STORE_UNAVAILABLE, now, null);
  }

  /** A failure refusal: the shared limiter's own failure-mode wait when it refused, else the composition's mode's. */
  Decision failure(Policy p, Reason r, long now, Decision shared) {
    long retry = shared != null && !shared.allowed() && shared.path() == Path.FAILURE_MODE ? shared.retryAfterMicros() : failureRetryMicros;
    return Decision.builder(p).refused(r).path(Path.FAILURE_MODE).resetAtMicros(now + retry).retryAfterMicros(retry).build();
  }

  /**
   * The more restrictive of two decisions: a refusal beats an allowance; between refusals the longer
   * retry (then less remaining); between allowances less remaining (then the later reset).
   */
  static Decision mostRestrictive(Decision a, Decision b) {
    if (a.allowed() != b.allowed()) {
      return a.allowed() ? b : a;
    }
    if (!a.allowed() && a.retryAfterMicros() != b.retryAfterMicros()) {
      return a.retryAfterMicros() >= b.retryAfterMicros() ? a : b;
    }
    if (a.remaining() != b.remaining()) {
      return a.remaining() < b.remaining() ? a : b;
    }
    return a.resetAtMicros() >= b.resetAtMicros() ? a : b;
  }

  /** What a composed ticket charged. */
  record Charges(LegSet set, Ticket[] legTickets, Ticket sharedTicket) {}
}

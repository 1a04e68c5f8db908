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
import dev.sluice.FailureMode;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * All of several limits, the one implementation: every leg is charged or none. The clocked legs are
 * pre-flighted (a non-mutating peek), the others charged first, then the clocked ones; when a leg
 * refuses or throws, every leg already charged is refunded, so a refused call leaves no leg charged.
 *
 * <p>Public: {@link #charge(List)} over a list of {@link Charge}s, each its own limiter, key,
 * permits and policy (a global ceiling over identities, Envoy's descriptors, a method's several
 * {@code @RateLimited} limits), answering each leg's decision and ticket ({@link Result}); and
 * {@link #mostRestrictive}, the one rule for the leg a combined answer reports.
 *
 * <p>Inside this package it is also a {@link Composition}'s decision over one {@link LegSet}: the
 * same charge loop, then the allowed legs combined into one decision with one composed ticket, and
 * that ticket's refund and settlement over every part it charged. The shared state, when there is
 * one, is asked first by {@link SharedFirst}, which hands its decision in here so it is compensated
 * and ticketed with the legs.
 */
public final class AllOf {
  /** The engine of {@link #charge}: counters no one reads, the closed mode's wait for a leg that threw. */
  private static final AllOf CHARGES = new AllOf(new CompositionCounters(), FailureMode.closed().retryAfter().toNanos() / 1_000, null);

  /** One leg of an all-of call: charge {@code permits} to {@code key} under {@code policy} in {@code limiter}. */
  public record Charge(RateLimiter limiter, String key, long permits, Policy policy) {
    public Charge {
      Checks.notNull("limiter", limiter);
      Checks.notNull("policy", policy);
    }

    /** {@code permits} to {@code key} under {@code limiter}'s own policy. */
    public static Charge of(RateLimiter limiter, String key, long permits) {
      return new Charge(limiter, key, permits, Checks.notNull("limiter", limiter).policy());
    }
  }

  /**
   * What one {@link #charge} decided. {@code legs} holds, in the order of the charges, what each leg
   * answered: its allowance with its ticket (refunded already when the call was refused), its
   * refusal, or, for a leg whose pre-flight allowed but that was not charged because another refused,
   * that peek (no ticket); null for a leg never asked. {@code decision} is the refusal when any leg
   * refused (the most restrictive one of the pre-flight), else the most restrictive allowance
   * ({@link #mostRestrictive}), whose ticket refunds its own leg only: give the call back with
   * {@link #refund()}.
   */
  public record Result(List<Charge> charges, List<Decision> legs, Decision decision) {
    public boolean allowed() {
      return decision.allowed();
    }

    /**
     * Refunds every leg this call charged, each into its own limiter (once per ticket). The composed
     * answer as for a composed ticket: {@code UNKNOWN} when any is, else {@code FAILED} when any
     * failed, else {@code APPLIED} when any applied, else {@code NO_EFFECT} (a refused call).
     */
    public Refund refund() {
      return allowed() ? AllOf.refund(charges, legs) : Refund.NO_EFFECT;
    }
  }

  /**
   * Charges every one of {@code charges}, or none; the legs that read a clock read the first such
   * leg's once ({@link ClockedRateLimiter}), the others their own. A programmer error a leg throws
   * ({@link IllegalArgumentException}) reaches the caller after the legs already charged are refunded;
   * any other exception refuses the call ({@link Reason#STORE_UNAVAILABLE}, the closed mode's wait).
   */
  public static Result charge(List<Charge> charges) {
    Ticker t = tickerOf(charges);
    return chargeAt(charges, t.nowMicros());
  }

  /** {@link #charge} at {@code nowMicros} for the legs on the first clocked leg's ticker. */
  public static Result chargeAt(List<Charge> charges, long nowMicros) {
    List<Charge> cs = List.copyOf(Checks.notNull("charges", charges));
    if (cs.isEmpty()) {
      throw new IllegalArgumentException("charges is empty; an all-of call needs at least one charge");
    }
    LegSet s = LegSet.of(cs, tickerOf(cs));
    Decision[] got = new Decision[cs.size()];
    Decision[] asked = new Decision[cs.size()];
    Decision refusal = CHARGES.chargeLegs(s, null, 0, nowMicros, null, got, asked);
    Decision decision = refusal;
    if (decision == null) {
      for (Decision d : got) {
        decision = decision == null ? d : mostRestrictive(decision, d);
      }
    }
    return new Result(cs, Collections.unmodifiableList(Arrays.asList(asked)), decision);
  }

  /**
   * Refunds every allowed decision's ticket in {@code decided} into its charge's limiter (the
   * decisions in the order of {@code charges}; null and refused ones are skipped): the compensation
   * of an all-of call whose legs a caller decided itself. Answers as {@link Result#refund()}.
   */
  public static Refund refund(List<Charge> charges, List<Decision> decided) {
    LegSet s = LegSet.of(charges, tickerOf(charges));
    Ticket[] tickets = new Ticket[charges.size()];
    for (int i = 0; i < tickets.length; i++) {
      Decision d = decided.get(i);
      tickets[i] = d == null || !d.allowed() ? null : d.ticket().orElse(null);
    }
    long now = tickerOf(charges).nowMicros();
    return CHARGES.eachPart(null, new Charges(s, tickets, null), Refund.APPLIED, Refund.FAILED, Refund.UNKNOWN, Refund.NO_EFFECT,
        (i, t) -> CHARGES.refundLeg(s, i, t, now), null);
  }

  /** The clock of the first clocked charge, else the system's. */
  private static Ticker tickerOf(List<Charge> charges) {
    for (Charge c : charges) {
      if (c != null && c.limiter() instanceof ClockedRateLimiter cl) {
        return cl.ticker();
      }
    }
    return Ticker.system();
  }

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
    Decision[] got = new Decision[s.legs.length];
    Decision refusal = chargeLegs(s, s.legKey(key), permits, now, sd, got, null);
    return refusal != null ? refusal : combineAllowed(s, key, permits, got, sd);
  }

  /**
   * The all-of rule, once: pre-flight the clocked legs, charge the rest in {@link LegSet#order},
   * compensate every leg charged (and {@code sd}) when one refuses or throws. Returns the refusal, or
   * null with every leg's allowance in {@code got}. {@code asked}, when not null, receives what each
   * leg answered (a pre-flight's peek for a leg not charged because another refused).
   */
  private Decision chargeLegs(LegSet s, String k, long permits, long now, Decision sd, Decision[] got, Decision[] asked) {
    final int n = s.legs.length;
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
          long want = s.permits(i, permits);
          Decision p = c.peekAt(s.key(i, k), s.policies[i], now);
          if (p.allowed() && p.remaining() >= want) {
            note(asked, i, p);
            continue;
          }
          // Predicted to refuse. A refused peek of one permit is exactly the refused acquire; otherwise
          // ask for real (a refused acquire writes nothing) to get the retry-after of these permits.
          Decision r = want == 1 && !p.allowed() ? p : c.tryAcquireAt(s.key(i, k), want, s.policies[i], now);
          note(asked, i, r);
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
        long want = s.permits(i, permits);
        Decision d = s.clocked[i] != null
            ? s.clocked[i].tryAcquireAt(s.key(i, k), want, s.policies[i], now)
            : s.legs[i].tryAcquire(s.key(i, k), want, s.policies[i]);
        note(asked, i, d);
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
    return null;
  }

  private static void note(Decision[] asked, int i, Decision d) {
    if (asked != null) {
      asked[i] = d;
    }
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
        d = s.clocked[i] != null ? s.clocked[i].peekAt(s.key(i, k), s.policies[i], now) : s.legs[i].peek(s.key(i, k), s.policies[i]);
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
    if (composed != null && (retry != null || sharedRetry != null)) {
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
   * The more restrictive of two decisions, the one rule for the leg a combined answer reports: a
   * refusal beats an allowance; between refusals the longer retry (then less remaining); between
   * allowances less remaining (then the later reset).
   */
  public static Decision mostRestrictive(Decision a, Decision b) {
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

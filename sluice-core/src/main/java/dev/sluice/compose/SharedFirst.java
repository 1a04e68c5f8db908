package dev.sluice.compose;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * Shared state first, then the local legs: the shared store is asked once per call; the legs are
 * consulted only when it admits (its charge is compensated with theirs when a leg refuses). When it
 * cannot answer, the composition's {@link FailureMode} decides the shared state's part, applied
 * around it as a store-backed limiter applies its own around its store: a refusal ({@code closed})
 * refuses the call; {@code open}'s allowance lets the legs decide alone; a {@code fallback}'s
 * decision stands in for the shared state's and the legs decide with it. A call the legs decided
 * without the store is marked {@link Path#FALLBACK}. Corrupt state, an invalid clock and contention
 * refuse whatever the mode. The {@code missingKey} is sent for a call without a key.
 */
record SharedFirst(SharedState state, FailureMode mode, String missingKey, CompositionCounters counters) {
  boolean isSynchronous() {
    return state.isSynchronous();
  }

  Decision acquire(LegSet s, String key, long permits, long now, AllOf legs) {
    Decision sd = null;
    Throwable err = null;
    try {
      sd = state.check(key(key), permits);
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      err = e;
    }
    return afterShared(s, key, permits, now, sd, err, legs);
  }

  /** No thread is held while the store answers; the legs are decided on the thread that completes it. */
  CompletionStage<Decision> acquireAsync(LegSet s, String key, long permits, long now, AllOf legs) {
    CompletionStage<Decision> f;
    try {
      f = state.checkAsync(key(key), permits);
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    return f.handle((sd, err) -> afterShared(s, key, permits, now, sd, unwrap(err), legs));
  }

  Decision peek(LegSet s, String key, long now, AllOf legs) {
    Decision sd = null;
    try {
      sd = state.peek(key(key));
    } catch (IllegalArgumentException e) {
      throw e;
    } catch (RuntimeException e) {
      sd = null;
    }
    if (sd == null || storeFailed(sd)) {
      Reason r = failure(sd);
      Decision part = FailureMode.alwaysClosed(r) ? null : mode.peek(state.policy(), key(key), r, null, now);
      if (refusedWithoutDeciding(part)) {
        return legs.failure(s.policies[0], r, now, sd);
      }
      return legs.peek(s, key, now, standIn(part), true);
    }
    return legs.peek(s, key, now, sd, false);
  }

  void reset(String key) {
    state.reset(key(key));
    mode.reset(key(key), state.policy());
  }

  /**
   * Never throws but an {@link Error}: a refund that throws counts as failed. A ticket the shared
   * state did not issue goes to the mode (a fallback's own tickets refund into it).
   */
  Refund refund(Ticket t) {
    try {
      Refund r = state.refund(t);
      return r == Refund.NO_EFFECT ? mode.refundForeign(t) : r;
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      counters.warn("the shared state's refund threw; the shared budget stays stricter until its window rolls", e);
      return Refund.FAILED;
    }
  }

  /** Never throws but an {@link Error}: a settlement that throws counts as failed. Foreign tickets as for {@link #refund}. */
  Settlement settle(Ticket t, long actualPermits) {
    try {
      Settlement r = state.settle(t, actualPermits);
      return r == Settlement.NO_EFFECT ? mode.settleForeign(t, actualPermits) : r;
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      counters.warn("the shared state's settlement threw; its reservation stays the charge", e);
      return Settlement.FAILED;
    }
  }

  private Decision afterShared(LegSet s, String key, long permits, long now, Decision sd, Throwable err, AllOf legs) {
    if (err == null && sd != null && !storeFailed(sd)) {
      return sd.allowed() ? legs.acquire(s, key, permits, now, sd) : sd;
    }
    counters.sharedFailures.increment();
    if (sd != null && sd.ticket().isPresent()) {
      // Counted by the shared limiter's own fallback, not by the store: this composition's mode decides instead.
      refund(sd.ticket().get());
    }
    Reason r = failure(sd);
    Decision part = FailureMode.alwaysClosed(r) ? null : mode.decide(state.policy(), key(key), permits, r, err, now);
    if (refusedWithoutDeciding(part)) {
      return legs.failure(s.policies[0], r, now, sd);
    }
    if (!part.allowed()) {
      return part; // the fallback's own refusal: nothing was charged
    }
    return legs.acquire(s, key, permits, now, standIn(part)).withPath(Path.FALLBACK);
  }

  /** The reason the shared state could not answer: its decision's failure reason, else {@link Reason#STORE_UNAVAILABLE}. */
  private static Reason failure(Decision sd) {
    return sd != null && sd.reason().isFailure() ? sd.reason() : Reason.STORE_UNAVAILABLE;
  }

  /**
   * True when no limiter decided the shared part: an always-closed reason (null), or a refusal of
   * the mode itself ({@code closed}, a fallback that could not decide); the call is then refused with
   * the mode's wait, or the shared limiter's own when it refused.
   */
  private static boolean refusedWithoutDeciding(Decision part) {
    return part == null || (!part.allowed() && part.path() == Path.FAILURE_MODE);
  }

  /**
   * The mode's decision of the shared part as the legs see it: a fallback's, which counted and knows
   * its limit, or null for {@code open}'s allowance, which charged nothing and knows no limit.
   */
  private static Decision standIn(Decision part) {
    return part.reason().isFailure() ? null : part;
  }

  private String key(String key) {
    return key == null ? missingKey : key;
  }

  /**
   * True when the shared limiter did not decide on its own store: a failure reason, or its own
   * failure mode or fallback served. A {@link Path#NEAR_CACHE} refusal is the store's answer,
   * remembered; reading it as a failure would let the local legs admit what the store refused.
   */
  private static boolean storeFailed(Decision sd) {
    return sd.reason().isFailure() || sd.path() == Path.FALLBACK || sd.path() == Path.FAILURE_MODE;
  }

  private static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  @Override public String toString() {
    return "shared=" + state + ", failureMode=" + mode;
  }
}

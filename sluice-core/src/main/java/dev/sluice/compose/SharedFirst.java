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
 * consulted only when it admits (its charge is compensated with theirs when a leg refuses), and
 * when it cannot answer, {@link Degrade} decides: the legs alone ({@link Path#FALLBACK}) or a
 * refusal. Corrupt state, an invalid clock and contention refuse whatever the degrade. The
 * {@code missingKey} is sent for a call without a key.
 */
record SharedFirst(SharedState state, Degrade degrade, String missingKey, CompositionCounters counters) {
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
      if (degrade == Degrade.FAIL_CLOSED || (sd != null && FailureMode.alwaysClosed(sd.reason()))) {
        Reason r = sd != null && sd.reason().isFailure() ? sd.reason() : Reason.STORE_UNAVAILABLE;
        return legs.failure(s.policies[0], r, now, sd);
      }
      return legs.peek(s, key, now, null, true);
    }
    return legs.peek(s, key, now, sd, false);
  }

  void reset(String key) {
    state.reset(key(key));
  }

  /** Never throws but an {@link Error}: a refund that throws counts as failed. */
  Refund refund(Ticket t) {
    try {
      return state.refund(t);
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      counters.warn("the shared state's refund threw; the shared budget stays stricter until its window rolls", e);
      return Refund.FAILED;
    }
  }

  /** Never throws but an {@link Error}: a settlement that throws counts as failed. */
  Settlement settle(Ticket t, long actualPermits) {
    try {
      return state.settle(t, actualPermits);
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
      // Counted by the shared limiter's own fallback, not by the store: the degrade policy decides instead.
      refund(sd.ticket().get());
    }
    Reason r = sd != null && sd.reason().isFailure() ? sd.reason() : Reason.STORE_UNAVAILABLE;
    if (degrade == Degrade.FAIL_CLOSED || FailureMode.alwaysClosed(r)) {
      return legs.failure(s.policies[0], r, now, sd);
    }
    return legs.acquire(s, key, permits, now, null).withPath(Path.FALLBACK);
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
    return "shared=" + state + ", degrade=" + degrade;
  }
}

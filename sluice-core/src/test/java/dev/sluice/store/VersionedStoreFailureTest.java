package dev.sluice.store;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoreTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Store outages and timeouts become decisions under the failure mode; nothing reaches the caller. */
class VersionedStoreFailureTest {
  static final long T0 = VersionedStoreRateLimiterTest.T0;
  static final Policy P = Policy.gcra("fail", 10, Duration.ofSeconds(1), 3);

  @Test
  void storeErrorsAreStoreUnavailableAndTimeoutsAreTimeoutUnderEachMode() {
    for (String op : List.of("read", "cas")) {
      for (RuntimeException e : List.of(new StoreException("down"), new StoreTimeoutException("slow"),
          new IllegalStateException("driver bug"), new NullPointerException())) {
        Reason expected = e instanceof StoreTimeoutException ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE;
        FaultyStore store = new FaultyStore();
        store.hook = (o, p, id, d) -> {
          if (o.equals(op)) {
            throw e;
          }
        };
        VersionedStoreRateLimiter closed = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0))
            .failureMode(FailureMode.closed(Duration.ofMillis(700))).build();
        Decision d = closed.tryAcquire("k");
        assertThat(d.allowed()).as("%s on %s", e, op).isFalse();
        assertThat(d.reason()).isEqualTo(expected);
        assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(d.retryAfterMicros()).isEqualTo(700_000);

        List<Reason> alerted = new CopyOnWriteArrayList<>();
        VersionedStoreRateLimiter open = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0))
            .failureMode(FailureMode.open((p, r, c) -> alerted.add(r))).build();
        Decision o = open.tryAcquire("k");
        assertThat(o.allowed()).isTrue();
        assertThat(o.reason()).isEqualTo(expected);
        assertThat(o.path()).isEqualTo(Path.FAILURE_MODE);
        assertThat(o.ticket()).isEmpty();
        assertThat(alerted).containsExactly(expected);

        InMemoryVersionedStore localStore = new InMemoryVersionedStore();
        VersionedStoreRateLimiter local = VersionedStoreRateLimiter.builder(P, localStore).ticker(ManualTicker.at(T0)).build();
        VersionedStoreRateLimiter fallback = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0))
            .failureMode(FailureMode.fallback(local)).build();
        Decision f = fallback.tryAcquire("k");
        assertThat(f.allowed()).isTrue();
        assertThat(f.path()).isEqualTo(Path.FALLBACK);
        assertThat(f.remaining()).isEqualTo(2);
        if (op.equals("read")) {
          // A peek under fallback asks the local limiter without charging it.
          assertThat(fallback.peek("k").path()).isEqualTo(Path.FALLBACK);
          assertThat(fallback.peek("k").remaining()).isEqualTo(2);
        }
      }
    }
  }

  /** A refund that failed before writing can be retried; one whose write failed may have applied, so it stays spent. */
  @Test
  void aFailedRefundLeavesTheLimiterStricterAndTheTicketReusableOnlyWhenNothingWasWritten() {
    FaultyStore store = new FaultyStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0)).build();
    Ticket t = limiter.tryAcquire("k").ticket().orElseThrow();
    store.hook = (o, p, id, d) -> {
      if (o.equals("read")) {
        throw new StoreException("down");
      }
    };
    assertThat(limiter.refund(t)).isEqualTo(Refund.FAILED);
    assertThat(t.isSpent()).isFalse();
    store.hook = (o, p, id, d) -> {};
    assertThat(limiter.peek("k").remaining()).isEqualTo(2);
    assertThat(limiter.refund(t)).isEqualTo(Refund.APPLIED);
    assertThat(limiter.peek("k").remaining()).isEqualTo(3);

    Ticket u = limiter.tryAcquire("k").ticket().orElseThrow();
    store.hook = (o, p, id, d) -> {
      if (o.equals("cas")) {
        throw new StoreException("down");
      }
    };
    assertThat(limiter.refund(u)).as("the write's outcome is unknown").isEqualTo(Refund.UNKNOWN);
    store.hook = (o, p, id, d) -> {};
    assertThat(limiter.peek("k").remaining()).isEqualTo(2);
    assertThat(limiter.refund(u)).as("the write had not applied: the retry is the one application").isEqualTo(Refund.APPLIED);
    assertThat(limiter.peek("k").remaining()).isEqualTo(3);
  }

  /**
   * Issue 26, finding 3: a refund or settlement whose write applied but whose answer was lost was
   * answered FAILED, and a retry applied it again. Now the answer is UNKNOWN, the ticket's id is
   * written in the same compare-and-set, and a retry (of the same ticket object, or of one restored
   * from its parts) changes nothing.
   */
  @Test
  void aRefundOrSettlementWhoseAnswerWasLostIsUnknownAndItsRetryChangesNothing() {
    FaultyStore store = new FaultyStore();
    Ticket.Issuer issuer = new Ticket.Issuer();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0)).issuer(issuer).build();
    Ticket t = limiter.tryAcquire("k").ticket().orElseThrow();
    Ticket s = limiter.tryAcquire("k").ticket().orElseThrow();
    limiter.tryAcquire("k");
    assertThat(limiter.peek("k").remaining()).isZero();
    store.loseCasReply = true;
    assertThat(limiter.refund(t)).isEqualTo(Refund.UNKNOWN);
    assertThat(limiter.settle(s, 0)).isEqualTo(Settlement.UNKNOWN);
    store.loseCasReply = false;
    assertThat(limiter.peek("k").remaining()).as("both applied once").isEqualTo(2);
    assertThat(limiter.refund(t)).isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.settle(s, 0)).isEqualTo(Settlement.NO_EFFECT);
    assertThat(limiter.refund(issuer.restore(P, "k", 1, s.stamp(), s.id()))).isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.peek("k").remaining()).as("and never twice").isEqualTo(2);
  }

  @Test
  void everyStoreCallGetsTheCallsDeadlineAndASlowReadIsNotFollowedByAWrite() {
    FaultyStore store = new FaultyStore();
    FakePause pause = new FakePause();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0))
        .timeout(Duration.ofMillis(40)).pause(pause).build();
    long before = pause.nanoTime();
    limiter.tryAcquire("k");
    assertThat(store.lastDeadline.get() - before).isEqualTo(TimeUnit.MILLISECONDS.toNanos(40));

    // A store that overruns the deadline and answers anyway: the call is over, no write is started.
    store.resetCounts();
    store.hook = (o, p, id, d) -> pause.advance(d - pause.nanoTime() + TimeUnit.MILLISECONDS.toNanos(5));
    Decision d = limiter.tryAcquire("k");
    assertThat(d.reason()).isEqualTo(Reason.TIMEOUT);
    assertThat(store.writes.get()).isZero();
  }

  @Test
  void resetSwallowsStoreTroubleAndSweepReportsIt() {
    FaultyStore store = new FaultyStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0)).build();
    store.hook = (o, p, id, d) -> {
      throw new StoreException("down");
    };
    limiter.reset("k");
    org.assertj.core.api.Assertions.assertThatThrownBy(limiter::sweep).isInstanceOf(StoreException.class).hasMessage("down");
  }
}

package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.memory.MemoryRateLimiter;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Outage and fallback, on every backend whose test supplies {@link #outage}: a fallback that rejects
 * a key still decides, and a ticket the fallback issued refunds into it after recovery. Part of
 * {@link RateLimiterContract}.
 */
public abstract sealed class OutageCases extends SettlementCases permits BoundCases {

  OutageCases() {}

  // ------------------------------------------------------------------------------------------
  // A fallback during an outage (issue 13), on every backend with an outage fixture.
  // ------------------------------------------------------------------------------------------

  /** Issue 13: with the store down, the fallback's own rule (a key over its length cap) threw instead of deciding. */
  @Test
  void aFallbackThatRejectsTheKeyDuringAnOutageStillDecides() throws Exception {
    duringAnOutage((outage, fallback) -> {
      String longKey = "k".repeat(MemoryRateLimiter.DEFAULT_MAX_KEY_LENGTH + 1);
      Decision d = outage.limiter().tryAcquire(longKey);
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.reason()).isIn(Reason.STORE_UNAVAILABLE, Reason.TIMEOUT);
      Decision async = outage.limiter().tryAcquireAsync(longKey, 1).toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(async.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(outage.limiter().peek(longKey).path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(outage.limiter().tryAcquire("short").path()).isEqualTo(Path.FALLBACK);
    });
  }

  /** Issue 13: a ticket the fallback issued during an outage and refunded after recovery left the fallback charged. */
  @Test
  void aFallbackTicketRefundedAfterRecoveryReturnsItsPermitToTheFallback() throws Exception {
    duringAnOutage((outage, fallback) -> {
      Decision d = outage.limiter().tryAcquire("k");
      assertThat(d.path()).isEqualTo(Path.FALLBACK);
      assertThat(fallback.peek("k").remaining()).isEqualTo(FALLBACK_LIMIT - 1);
      outage.up();
      assertThat(outage.limiter().tryAcquire("other").path()).isEqualTo(Path.PRIMARY);
      assertThat(outage.limiter().refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
      assertThat(fallback.peek("k").remaining()).isEqualTo(FALLBACK_LIMIT);
      // (The store itself may have been charged too: a call that timed out can still run once a
      // frozen server wakes, which errs on the strict side.)
    });
  }

  private static final long FALLBACK_LIMIT = 3;

  /**
   * Runs {@code body} with the store down, on the backend's outage fixture over a fixed window of
   * {@link #FALLBACK_LIMIT} failing over to a memory tier on the same clock (handed to the body);
   * skipped when the backend has no outage fixture.
   */
  private void duringAnOutage(WithTheStoreDown body) throws Exception {
    Policy p = policy("fixed-window", FALLBACK_LIMIT);
    ManualTicker ticker = newTicker();
    RateLimiter fallback = MemoryRateLimiter.builder(p).ticker(ticker).build();
    Optional<Outage> o = outage(p, ticker, FailureMode.fallback(fallback));
    assumeTrue(o.isPresent(), "backend has no outage fixture");
    try (Outage outage = o.get()) {
      outage.down();
      body.run(outage, fallback);
    }
  }

  /** A case run with the store down. */
  @FunctionalInterface
  private interface WithTheStoreDown {
    void run(Outage outage, RateLimiter fallback) throws Exception;
  }
}

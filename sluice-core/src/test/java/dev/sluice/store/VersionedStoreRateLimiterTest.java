package dev.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.StoredId;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.StoredRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The engine over the in-memory store, checked decision by decision against the reference model. */
class VersionedStoreRateLimiterTest {
  static final long T0 = 1_767_225_600_000_000L; // 2026-01-01T00:00:00Z

  static Stream<Policy> policies() {
    return Stream.of(
        Policy.fixedWindow("fw", 7, Duration.ofSeconds(10)),
        Policy.slidingWindow("sw", 9, Duration.ofSeconds(4)),
        Policy.tokenBucket("tb", 8, 3, Duration.ofSeconds(2)),
        Policy.gcra("gcra", 5, Duration.ofSeconds(3), 6));
  }

  /**
   * A seeded random trace of acquires, peeks, refunds of earlier tickets, resets and clock moves over
   * a few keys, replayed through the model (a map of states) and through the engine: every decision
   * field, every ticket stamp and every refund result must be equal.
   */
  @ParameterizedTest @MethodSource("policies")
  void everyDecisionEqualsTheReferenceModel(Policy policy) {
    Algorithm alg = policy.algorithm();
    ManualTicker ticker = ManualTicker.at(T0);
    FaultyStore store = new FaultyStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).build();
    Map<String, long[]> model = new HashMap<>();
    List<Ticket> tickets = new ArrayList<>();
    List<Long> stamps = new ArrayList<>();
    SplittableRandom rnd = new SplittableRandom(42 + policy.name().hashCode());
    String[] keys = {"alice", "bob", " carol ", "\uD83D\uDE00"};
    Outcome out = new Outcome();
    int allowed = 0, refused = 0, refunds = 0;
    for (int i = 0; i < 5_000; i++) {
      String key = keys[rnd.nextInt(keys.length)];
      long[] st = model.computeIfAbsent(key, k -> new long[3]);
      int op = rnd.nextInt(100);
      long now = ticker.nowMicros();
      if (op < 55) {
        long permits = 1 + rnd.nextInt((int) Math.min(3, policy.limit()));
        ReferenceModel.acquire(alg, st, now, permits, out);
        Decision d = limiter.tryAcquire(key, permits);
        assertThat(d).as("acquire #%d", i).isEqualTo(expected(policy, out));
        if (d.allowed()) {
          allowed++;
          tickets.add(d.ticket().orElseThrow());
          stamps.add(out.stamp());
          assertThat(d.ticket().orElseThrow().stamp()).isEqualTo(out.stamp());
        } else {
          refused++;
        }
      } else if (op < 65) {
        ReferenceModel.peek(alg, st, now, out);
        assertThat(limiter.peek(key)).as("peek #%d", i).isEqualTo(expected(policy, out));
      } else if (op < 75 && !tickets.isEmpty()) {
        int t = rnd.nextInt(tickets.size());
        Ticket ticket = tickets.remove(t);
        long stamp = stamps.remove(t);
        boolean live = ReferenceModel.ticketLive(alg, stamp, now);
        if (live) {
          ReferenceModel.refund(alg, model.get(ticket.key()), now, ticket.permits(), stamp, out);
        }
        boolean applies = live && out.wrote();
        Refund r = limiter.refund(ticket);
        assertThat(r).as("refund #%d", i).isEqualTo(applies ? Refund.APPLIED : Refund.NO_EFFECT);
        refunds += applies ? 1 : 0;
      } else if (op < 77) {
        model.put(key, new long[3]);
        limiter.reset(key);
      } else {
        ticker.advanceMicros(rnd.nextLong(alg instanceof Algorithm.SlidingWindow ? 2_500_000 : 1_500_000));
      }
    }
    assertThat(allowed).isGreaterThan(200);
    assertThat(refused).isGreaterThan(200);
    assertThat(refunds).isGreaterThan(5);
  }

  static Decision expected(Policy p, Outcome out) {
    return out.allowed()
        ? Decision.allowed(p, out.remaining(), out.resetAt(), null)
        : Decision.refused(p, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
  }

  @ParameterizedTest @MethodSource("policies")
  void anAllowedDecisionIsOneReadAndOneWriteAndARefusalAtTheLimitWritesNothing(Policy policy) {
    FaultyStore store = new FaultyStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(policy, store).ticker(ManualTicker.at(T0)).build();
    for (int i = 0; i < policy.limit(); i++) {
      store.resetCounts();
      assertThat(limiter.tryAcquire("k").allowed()).isTrue();
      assertThat(store.reads.get()).isEqualTo(1);
      assertThat(store.writes.get()).isEqualTo(1);
    }
    StoredRecord before = store.delegate.read(StoredId.policy(policy.name()), StoredId.key(policy.name(), "k"), 0);
    store.resetCounts();
    for (int i = 0; i < 50; i++) {
      Decision d = limiter.tryAcquire("k");
      assertThat(d.allowed()).isFalse();
      assertThat(d.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      limiter.peek("k");
    }
    assertThat(store.reads.get()).isEqualTo(100);
    assertThat(store.writes.get()).isZero();
    assertThat(store.delegate.read(StoredId.policy(policy.name()), StoredId.key(policy.name(), "k"), 0)).isEqualTo(before);
  }

  /** Issue 17.3: a peek was reported as a decision, so health probes counted as admissions. */
  @Test
  void aPeekIsNoDecisionForTheListenerAsOnTheMemoryTier() {
    Policy p = Policy.fixedWindow("peeks", 3, Duration.ofMinutes(1));
    java.util.List<Decision> told = new java.util.concurrent.CopyOnWriteArrayList<>();
    RateLimitListener listener = new RateLimitListener() {
      @Override public void onDecision(Decision decision, String key) {
        told.add(decision);
      }
    };
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, new InMemoryVersionedStore()).ticker(ManualTicker.at(T0))
        .listener(listener, false).build();
    for (int i = 0; i < 10; i++) {
      assertThat(limiter.peek("k").allowed()).isTrue();
    }
    assertThat(told).isEmpty();
    limiter.tryAcquire("k");
    assertThat(told).hasSize(1);
  }

  @Test
  void theRecordIsHashedVersionedAndCarriesTheDocumentedFormatAndExpiry() {
    Policy p = Policy.fixedWindow("login", 10, Duration.ofMinutes(5));
    InMemoryVersionedStore store = new InMemoryVersionedStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, store).ticker(ManualTicker.at(T0)).build();
    limiter.tryAcquire("user:42", 3);
    StoredRecord r = store.read(StoredId.policy("login"), StoredId.key("login", "user:42"), 0);
    assertThat(r.value()).isEqualTo("s1|fixed-window|" + T0 + "|3|0|" + T0);
    assertThat(r.value()).doesNotContain("user:42");
    assertThat(r.expiresAtMicros()).isEqualTo(T0 + 300_000_000L);
    long v = r.version();
    assertThat(v).isBetween(1L, 1L << 48);
    limiter.tryAcquire("user:42");
    assertThat(store.read(StoredId.policy("login"), StoredId.key("login", "user:42"), 0).version()).isEqualTo(v + 1);
  }

  @Test
  void perCallOverridesArePoliciesOfTheirOwnInTheirOwnPartition() {
    Policy loose = Policy.fixedWindow("route", 100, Duration.ofMinutes(1));
    Policy tight = Policy.fixedWindow("route.expensive", 2, Duration.ofMinutes(1));
    InMemoryVersionedStore store = new InMemoryVersionedStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(loose, store).ticker(ManualTicker.at(T0)).build();
    assertThat(limiter.tryAcquire("u", 1, tight).allowed()).isTrue();
    assertThat(limiter.tryAcquire("u", 1, tight).allowed()).isTrue();
    assertThat(limiter.tryAcquire("u", 1, tight).allowed()).isFalse();
    assertThat(limiter.tryAcquire("u").remaining()).isEqualTo(99);
    assertThat(store.list(StoredId.policy("route.expensive"), null, 10, 0)).hasSize(1);
    assertThat(store.list(StoredId.policy("route"), null, 10, 0)).hasSize(1);
  }

  @Test
  void refundsGiveBackOnceAndNothingAfterTheWindowRolled() {
    Policy p = Policy.fixedWindow("refund", 3, Duration.ofSeconds(10));
    ManualTicker ticker = ManualTicker.at(T0);
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, new InMemoryVersionedStore()).ticker(ticker).build();
    Ticket a = limiter.tryAcquire("k", 2).ticket().orElseThrow();
    Ticket b = limiter.tryAcquire("k").ticket().orElseThrow();
    assertThat(limiter.tryAcquire("k").allowed()).isFalse();
    assertThat(limiter.refund(a)).isEqualTo(Refund.APPLIED);
    assertThat(limiter.refund(a)).isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.peek("k").remaining()).isEqualTo(2);
    ticker.advance(Duration.ofSeconds(10));
    assertThat(limiter.refund(b)).isEqualTo(Refund.NO_EFFECT);
  }

  @Test
  void theSlidingLogIsRefusedAtBuildTimeAndAsAnOverride() {
    Policy log = Policy.slidingLog("log", 5, Duration.ofSeconds(1));
    InMemoryVersionedStore store = new InMemoryVersionedStore();
    assertThatThrownBy(() -> VersionedStoreRateLimiter.builder(log, store))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy 'log' uses sliding-log, whose state grows with its limit; a versioned store keeps a fixed-size "
            + "state per key and runs fixed-window, sliding-window, token-bucket and gcra: use one of those, or sliding-log "
            + "on MemoryRateLimiter or Redis");
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(Policy.gcra("g", 1, Duration.ofSeconds(1), 1), store).build();
    assertThatThrownBy(() -> limiter.tryAcquire("k", 1, log)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("policy 'log' uses sliding-log, whose state grows with its limit; a versioned store");
  }

  @Test
  void badArgumentsThrowTheSharedMessagesAndBuilderSettingsAreChecked() {
    Policy p = Policy.fixedWindow("bad", 5, Duration.ofSeconds(1));
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, new InMemoryVersionedStore()).build();
    assertThatThrownBy(() -> limiter.tryAcquire(null)).hasMessage("key is null; a key must be a non-blank string");
    assertThatThrownBy(() -> limiter.tryAcquire("  ")).hasMessageContaining("is blank");
    assertThatThrownBy(() -> limiter.tryAcquire("k", 6)).hasMessage(
        "permits 6 exceeds 5, the most policy 'bad' can ever grant at once; such a request could never be allowed");
    assertThatThrownBy(() -> limiter.tryAcquire("k", 0)).hasMessage("permits 0 is below 1; ask for at least one permit");
    assertThatThrownBy(() -> limiter.peek("\uD800")).hasMessageContaining("unpaired UTF-16 surrogate");
    // Keys have no length cap: the store sees a hash.
    assertThat(limiter.tryAcquire("x".repeat(100_000)).allowed()).isTrue();
    var b = VersionedStoreRateLimiter.builder(p, new InMemoryVersionedStore());
    assertThatThrownBy(() -> b.maxRetries(-1)).hasMessageStartingWith("maxRetries -1 is outside 0..100");
    assertThatThrownBy(() -> b.timeout(Duration.ZERO)).hasMessageStartingWith("timeout PT0S is outside 1 ms..1 min");
    assertThatThrownBy(() -> b.clockTolerance(Duration.ofSeconds(-1))).hasMessageStartingWith("clockTolerance PT-1S is outside 0..1 h");
    assertThatThrownBy(() -> VersionedStoreRateLimiter.builder(p, null)).hasMessage("store is null");
  }

  @Test
  void theListenerSeesDecisionsRefundsAndStoreCallsAndKeysOnlyWhenOptedIn() {
    Policy p = Policy.fixedWindow("listen", 1, Duration.ofSeconds(1));
    List<String> seen = new CopyOnWriteArrayList<>();
    RateLimitListener l = new RateLimitListener() {
      @Override public void onDecision(Decision d, String key) { seen.add("decision " + d.reason() + " " + key); }
      @Override public void onRefusal(Decision d, String key) { seen.add("refusal " + key); }
      @Override public void onRefund(Policy policy, Refund r) { seen.add("refund " + r); }
      @Override public void onStoreCall(Policy policy, long nanos, Throwable e) { seen.add("store " + (e == null)); }
    };
    VersionedStoreRateLimiter hidden = VersionedStoreRateLimiter.builder(p, new InMemoryVersionedStore())
        .ticker(ManualTicker.at(T0)).listener(l, false).build();
    Ticket t = hidden.tryAcquire("k").ticket().orElseThrow();
    hidden.tryAcquire("k");
    hidden.refund(t);
    assertThat(seen).containsExactly("store true", "store true", "decision WITHIN_LIMIT null",
        "store true", "decision LIMIT_EXCEEDED null", "refusal null",
        "store true", "store true", "refund APPLIED");
    seen.clear();
    VersionedStoreRateLimiter shown = VersionedStoreRateLimiter.builder(p, new InMemoryVersionedStore())
        .ticker(ManualTicker.at(T0)).listener(new RateLimitListener() {
          @Override public void onDecision(Decision d, String key) { seen.add(key); throw new IllegalStateException("boom"); }
        }, true).build();
    assertThat(shown.tryAcquire("k").allowed()).isTrue();
    assertThat(seen).containsExactly("k");
  }
}

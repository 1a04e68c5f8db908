package dev.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.StoredId;
import dev.sluice.spi.StoredRecord;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Sweep deletes only well-formed expired records whose version is unchanged; it keeps and reports
 * malformed records, keeps live ones, and pages through partitions larger than one page.
 */
class VersionedStoreSweepTest {
  static final long T0 = VersionedStoreRateLimiterTest.T0;

  @Test
  void sweepDeletesExpiredKeepsLiveAndMalformedAndSkipsRecordsChangedMeanwhile() {
    Policy p = Policy.fixedWindow("sweep", 3, Duration.ofSeconds(10));
    String part = StoredId.policy("sweep");
    FaultyStore store = new FaultyStore();
    ManualTicker ticker = ManualTicker.at(T0);
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, store).ticker(ticker).build();
    for (int i = 0; i < 600; i++) {
      limiter.tryAcquire("old-" + i);
    }
    ticker.advance(Duration.ofSeconds(6));
    for (int i = 0; i < 40; i++) {
      limiter.tryAcquire("new-" + i);
    }
    String bad1 = StoredId.key("sweep", "bad-1");
    String bad2 = StoredId.key("sweep", "bad-2");
    store.delegate.put(part, bad1, "garbage", 5, 1);
    store.delegate.put(part, bad2, "s1|fixed-window|1|1|0|1", 0, 1); // valid text, impossible version
    // A stored expiry earlier than the state's own is not trusted: the later of the two counts.
    String early = StoredId.key("sweep", "early");
    store.delegate.put(part, early, "s1|fixed-window|" + (T0 + 6_000_000) + "|1|0|" + (T0 + 6_000_000), 4, T0);
    // A record under another policy's partition is never touched.
    limiter.tryAcquire("x", 1, Policy.fixedWindow("elsewhere", 3, Duration.ofSeconds(1)));
    // One expired record is written again between the listing and its delete.
    String raced = StoredId.key("sweep", "old-7");
    store.hook = (op, pa, id, d) -> {
      if (op.equals("delete") && id.equals(raced)) {
        store.bumpVersion(pa, id);
      }
    };
    ticker.advance(Duration.ofSeconds(5)); // T0 + 11 s: the old-* windows ended at T0 + 10 s
    store.resetCounts();
    SweepResult r = limiter.sweep();
    assertThat(r.scanned()).isEqualTo(600 + 40 + 3);
    assertThat(r.deleted()).isEqualTo(599);
    assertThat(r.changed()).isEqualTo(1);
    assertThat(r.live()).isEqualTo(41);
    assertThat(r.malformed()).isEqualTo(2);
    assertThat(r.malformedIds()).containsExactlyInAnyOrder(bad1, bad2);
    assertThat(store.lists.get()).isEqualTo(3); // 643 records in pages of 256
    assertThat(store.delegate.size()).isEqualTo(1 + 40 + 2 + 1 + 1);
    assertThat(store.delegate.read(part, raced, 0)).isNotNull();
    // Checks against the kept malformed record still fail closed.
    store.hook = (op, pa, id, d) -> {};
    store.delegate.put(part, StoredId.key("sweep", "victim"), "garbage", 5, 1);
    assertThat(limiter.tryAcquire("victim").reason()).isEqualTo(Reason.CORRUPT_STATE);
    assertThat(limiter.sweep().malformed()).isEqualTo(3);
    limiter.reset("victim");
    assertThat(limiter.sweep().malformed()).isEqualTo(2);
  }

  @Test
  void aSweptKeyDecidesExactlyAsBeforeTheSweep() {
    for (Policy p : List.of(Policy.slidingWindow("s-sw", 4, Duration.ofSeconds(2)), Policy.tokenBucket("s-tb", 4, 1, Duration.ofSeconds(1)),
        Policy.gcra("s-gcra", 2, Duration.ofSeconds(1), 4))) {
      InMemoryVersionedStore store = new InMemoryVersionedStore();
      ManualTicker ticker = ManualTicker.at(T0);
      VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, store).ticker(ticker).build();
      for (int i = 0; i < 4; i++) {
        limiter.tryAcquire("k");
      }
      StoredRecord r = store.read(StoredId.policy(p.name()), StoredId.key(p.name(), "k"), 0);
      ticker.set(r.expiresAtMicros() - 1);
      assertThat(limiter.sweep().deleted()).as(p.name()).isZero();
      var before = limiter.peek("k");
      ticker.set(r.expiresAtMicros());
      var atExpiry = limiter.peek("k");
      assertThat(limiter.sweep().deleted()).isEqualTo(1);
      assertThat(limiter.peek("k")).isEqualTo(atExpiry);
      assertThat(atExpiry.remaining()).isEqualTo(p.limit());
      assertThat(before.remaining()).isLessThan(p.limit());
    }
  }

  @Test
  void sweepRefusesAnImplausibleClock() {
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(Policy.fixedWindow("s", 1, Duration.ofSeconds(1)),
        new InMemoryVersionedStore()).ticker(() -> 0).build();
    assertThatThrownBy(limiter::sweep).isInstanceOf(IllegalStateException.class)
        .hasMessage("clock reading 0 us is not plausible (it must be in 1..2^52 - 2^49); sweep cannot judge expiry with it");
  }

  /** Issue 13: two public SweepResult records (core, JDBC) with different fields; one now, which caps the named ids itself. */
  @Test
  void aSweepResultNamesAtMostTheFirstHundredMalformedRecords() {
    List<String> ids = java.util.stream.IntStream.range(0, 250).mapToObj(i -> "id-" + i).toList();
    SweepResult r = new SweepResult(250, 0, 0, 0, 250, ids);
    assertThat(r.malformedIds()).hasSize(SweepResult.MAX_NAMED).isEqualTo(ids.subList(0, 100));
    assertThatThrownBy(() -> r.malformedIds().add("x")).isInstanceOf(UnsupportedOperationException.class);
  }
}

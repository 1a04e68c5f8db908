package dev.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.StoredId;
import dev.sluice.spi.StoredRecord;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Malformed records fail closed as CORRUPT_STATE; implausible clock readings fail closed as INVALID_CLOCK. */
class VersionedStoreCorruptAndClockTest {
  static final long T0 = VersionedStoreRateLimiterTest.T0;
  static final Policy P = Policy.fixedWindow("corrupt", 5, Duration.ofSeconds(10));
  static final String PART = StoredId.policy("corrupt");
  static final String ID = StoredId.key("corrupt", "victim");

  static final List<FailureMode> ALL_MODES = List.of(FailureMode.closed(),
      FailureMode.open((p, r, c) -> { throw new AssertionError("open must not be consulted for " + r); }),
      FailureMode.fallback(VersionedStoreRateLimiter.builder(P, new InMemoryVersionedStore()).build()));

  @ParameterizedTest
  @ValueSource(strings = {
      "garbage", "s1|fixed-window|1|2|0", "s1|fixed-window|1|2|0|5|6", "s2|fixed-window|1|2|0|5",
      "s1|leaky-bucket|1|2|0|5", "s1|fixed-window|-1|2|0|5", "s1|fixed-window|01|2|0|5", "s1|fixed-window|1|+2|0|5",
      "s1|fixed-window| 1|2|0|5", "s1|fixed-window|1|2|0|5 ", "s1|fixed-window|0|2|0|5", "s1|fixed-window|1|2|3|5",
      "s1|fixed-window|1|2|0|0", "s1|fixed-window|1|9223372036854775807|0|5", "s1|fixed-window|1|4503599627370497|0|5",
      "s1|gcra|1|2|0|", "s1|fixed-window|1||0|5", "S1|fixed-window|1|2|0|5", "s1|Fixed-Window|1|2|0|5", "{\"count\":3}"})
  void aMalformedRecordIsRefusedAsCorruptStateUnderEveryModeAndNeverOverwritten(String value) {
    for (FailureMode mode : ALL_MODES) {
      FaultyStore store = new FaultyStore();
      store.delegate.put(PART, ID, value, 7, T0 + 1);
      Ticket.Issuer issuer = new Ticket.Issuer(); // held by the test, to refund a ticket no acquire could issue
      VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0))
          .failureMode(mode).issuer(issuer).build();
      Decision d = limiter.tryAcquire("victim");
      assertThat(d.allowed()).as("%s under %s", value, mode).isFalse();
      assertThat(d.reason()).isEqualTo(Reason.CORRUPT_STATE);
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(limiter.peek("victim").reason()).isEqualTo(Reason.CORRUPT_STATE);
      assertThat(limiter.refund(issuer.issue(P, "victim", 1, T0))).isEqualTo(Refund.FAILED);
      assertThat(store.writes.get()).isZero();
      assertThat(store.delegate.read(PART, ID, 0)).isEqualTo(new StoredRecord(ID, value, 7, T0 + 1));
    }
  }

  @Test
  void aRecordWithABadVersionOrIdIsCorruptAndResetClearsIt() {
    FaultyStore store = new FaultyStore();
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0)).build();
    store.delegate.put(PART, ID, "s1|fixed-window|" + T0 + "|1|0|" + T0, 0, T0 + 10_000_000);
    assertThat(limiter.tryAcquire("victim").reason()).isEqualTo(Reason.CORRUPT_STATE);
    store.delegate.put(PART, ID, "s1|fixed-window|" + T0 + "|1|0|" + T0, -3, T0 + 10_000_000);
    assertThat(limiter.tryAcquire("victim").reason()).isEqualTo(Reason.CORRUPT_STATE);
    // A store that answers with another record's id is not to be trusted either.
    String other = StoredId.key("corrupt", "someone-else");
    FaultyStore lying = new FaultyStore();
    lying.delegate.put(PART, ID, "s1|fixed-window|" + T0 + "|1|0|" + T0, 3, T0 + 10_000_000);
    VersionedStoreRateLimiter liar = VersionedStoreRateLimiter.builder(P, new dev.sluice.spi.VersionedStore() {
      @Override public StoredRecord read(String partition, String id, long deadlineNanos) {
        StoredRecord r = lying.read(partition, id, deadlineNanos);
        return new StoredRecord(other, r.value(), r.version(), r.expiresAtMicros());
      }

      @Override public boolean compareAndSet(String partition, String id, long expected, String value, long version,
                                             long expiresAt, long deadline) {
        return lying.compareAndSet(partition, id, expected, value, version, expiresAt, deadline);
      }

      @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadline) {
        return lying.list(partition, afterId, limit, deadline);
      }

      @Override public boolean deleteIfVersion(String partition, String id, long expected, long deadline) {
        return lying.deleteIfVersion(partition, id, expected, deadline);
      }
    }).ticker(ManualTicker.at(T0)).build();
    assertThat(liar.tryAcquire("victim").reason()).isEqualTo(Reason.CORRUPT_STATE);
    assertThat(lying.writes.get()).isZero();

    limiter.reset("victim");
    assertThat(store.delegate.read(PART, ID, 0)).isNull();
    assertThat(limiter.tryAcquire("victim").allowed()).isTrue();
  }

  @Test
  void aRecordWrittenUnderAnotherAlgorithmCountsAsAbsent() {
    FaultyStore store = new FaultyStore();
    store.delegate.put(PART, ID, "s1|token-bucket|" + T0 + "|0|0|" + T0, 9, T0 + 10_000_000);
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(ManualTicker.at(T0)).build();
    Decision d = limiter.tryAcquire("victim", 2);
    assertThat(d.allowed()).isTrue();
    assertThat(d.remaining()).isEqualTo(3);
    StoredRecord r = store.delegate.read(PART, ID, 0);
    assertThat(r.value()).isEqualTo("s1|fixed-window|" + T0 + "|2|0|" + T0);
    assertThat(r.version()).isEqualTo(10);
  }

  @ParameterizedTest
  @ValueSource(longs = {0, -1, Long.MIN_VALUE, (1L << 52) + 1, Long.MAX_VALUE})
  void anImplausibleClockReadingIsRefusedUnderEveryModeWithoutTouchingTheStore(long reading) {
    for (FailureMode mode : ALL_MODES) {
      FaultyStore store = new FaultyStore();
      Ticket.Issuer issuer = new Ticket.Issuer();
      VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(P, store).ticker(() -> reading)
          .failureMode(mode).issuer(issuer).build();
      Decision d = limiter.tryAcquire("k");
      assertThat(d.allowed()).isFalse();
      assertThat(d.reason()).isEqualTo(Reason.INVALID_CLOCK);
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(limiter.peek("k").reason()).isEqualTo(Reason.INVALID_CLOCK);
      assertThat(limiter.refund(issuer.issue(P, "k", 1, T0))).isEqualTo(Refund.FAILED);
      assertThat(store.reads.get() + store.writes.get()).isZero();
    }
  }

  @Test
  void aClockBehindTheRecordsLastWriteBeyondTheToleranceIsRefused() {
    InMemoryVersionedStore store = new InMemoryVersionedStore();
    ManualTicker ahead = ManualTicker.at(T0 + 5_000_000);
    VersionedStoreRateLimiter fast = VersionedStoreRateLimiter.builder(P, store).ticker(ahead).build();
    assertThat(fast.tryAcquire("k").allowed()).isTrue();

    ManualTicker behind = ManualTicker.at(T0 + 3_999_999); // 1.000001 s behind the write
    AtomicInteger alerts = new AtomicInteger();
    VersionedStoreRateLimiter slow = VersionedStoreRateLimiter.builder(P, store).ticker(behind)
        .failureMode(FailureMode.open((p, r, c) -> alerts.incrementAndGet())).build();
    Decision d = slow.tryAcquire("k");
    assertThat(d.allowed()).isFalse();
    assertThat(d.reason()).isEqualTo(Reason.INVALID_CLOCK);
    assertThat(slow.peek("k").reason()).isEqualTo(Reason.INVALID_CLOCK);
    assertThat(alerts.get()).isZero();

    behind.set(T0 + 4_000_000); // exactly the tolerance behind: decided by the model (the window is kept)
    Decision ok = slow.tryAcquire("k");
    assertThat(ok.allowed()).isTrue();
    assertThat(ok.remaining()).isEqualTo(3);
    assertThat(ok.resetAtMicros()).isEqualTo(T0 + 5_000_000 + 10_000_000);

    // The record remembers the latest writer's clock, so a reading within tolerance of an older write
    // but beyond it of the latest one is still refused.
    behind.set(T0 + 3_500_000);
    assertThat(slow.tryAcquire("k").reason()).isEqualTo(Reason.INVALID_CLOCK);

    VersionedStoreRateLimiter tolerant = VersionedStoreRateLimiter.builder(P, store).ticker(behind)
        .clockTolerance(Duration.ofSeconds(5)).build();
    assertThat(tolerant.tryAcquire("k").allowed()).isTrue();
  }
}

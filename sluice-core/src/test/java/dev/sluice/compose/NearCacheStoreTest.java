package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import dev.sluice.store.InMemoryVersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The near-cache in front of a shared-store limiter (the compare-and-set engine over the in-memory
 * versioned store), counting every store operation: each one is a round trip on a real store.
 */
class NearCacheStoreTest {
  /** Counts the operations that reach the store. */
  static final class CountingStore implements VersionedStore {
    final InMemoryVersionedStore d = new InMemoryVersionedStore();
    final AtomicLong ops = new AtomicLong();
    volatile boolean down;

    private void call() {
      ops.incrementAndGet();
      if (down) {
        throw new StoreException("connection refused");
      }
    }

    @Override public StoredRecord read(String partition, String id, long deadlineNanos) {
      call();
      return d.read(partition, id, deadlineNanos);
    }

    @Override public boolean compareAndSet(String partition, String id, long expectedVersion, String value, long newVersion,
                                           long expiresAtMicros, long deadlineNanos) {
      call();
      return d.compareAndSet(partition, id, expectedVersion, value, newVersion, expiresAtMicros, deadlineNanos);
    }

    @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadlineNanos) {
      call();
      return d.list(partition, afterId, limit, deadlineNanos);
    }

    @Override public boolean deleteIfVersion(String partition, String id, long expectedVersion, long deadlineNanos) {
      call();
      return d.deleteIfVersion(partition, id, expectedVersion, deadlineNanos);
    }
  }

  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
  final Policy login = Policy.fixedWindow("login-" + Long.toHexString(System.nanoTime()), 5, Duration.ofMinutes(1));

  @Test
  void aFloodAgainstALockedKeySavesItsRoundTrips() {
    CountingStore store = new CountingStore();
    VersionedStoreRateLimiter shared = VersionedStoreRateLimiter.builder(login, store).ticker(ticker).build();
    NearCachedRateLimiter near = NearCachedRateLimiter.builder(shared).ticker(ticker).build();
    for (int i = 0; i < 5; i++) {
      assertThat(near.tryAcquire("victim").allowed()).isTrue();
    }
    assertThat(near.tryAcquire("victim").allowed()).isFalse();
    long before = store.ops.get();

    int flood = 10_000;
    for (int i = 0; i < flood; i++) {
      Decision d = near.tryAcquire("victim");
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.NEAR_CACHE);
    }
    assertThat(store.ops.get() - before).as("store operations during the flood").isZero();
    assertThat(near.hits()).isEqualTo(flood);

    // Without the near-cache the same flood costs at least one store read per call.
    CountingStore bare = new CountingStore();
    VersionedStoreRateLimiter plain = VersionedStoreRateLimiter.builder(login, bare).ticker(ticker).build();
    for (int i = 0; i < 6; i++) {
      plain.tryAcquire("victim");
    }
    long bareBefore = bare.ops.get();
    for (int i = 0; i < flood; i++) {
      plain.tryAcquire("victim");
    }
    assertThat(bare.ops.get() - bareBefore).isGreaterThanOrEqualTo(flood);

    // A refund through the near-cache invalidates: the permit is usable at once.
    Decision last = null;
    ticker.advance(Duration.ofMinutes(1));
    for (int i = 0; i < 5; i++) {
      last = near.tryAcquire("victim");
    }
    assertThat(near.tryAcquire("victim").allowed()).isFalse();
    assertThat(near.refund(last.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(near.tryAcquire("victim").allowed()).isTrue();
  }

  @Test
  void aCompositionOverTheStoreEngineDegradesAndSaysWhichPathServed() {
    CountingStore store = new CountingStore();
    VersionedStoreRateLimiter shared = VersionedStoreRateLimiter.builder(login, store).ticker(ticker).build();
    var local = new Legs.Clocked(Legs.memory(Policy.fixedWindow("local", 2, Duration.ofMinutes(1)), ticker));
    Composition local2 = Composition.builder().sharedState(SharedState.of(NearCachedRateLimiter.builder(shared).ticker(ticker).build()))
        .leg(local).build();
    Composition closed = Composition.builder().sharedState(SharedState.of(shared)).failureMode(FailureMode.closed())
        .leg(Legs.memory(Policy.fixedWindow("local", 2, Duration.ofMinutes(1)), ticker)).build();

    assertThat(local2.tryAcquire("acme").path()).isEqualTo(Path.PRIMARY);
    store.down = true;
    Decision fallback = local2.tryAcquire("acme");
    assertThat(fallback.allowed()).isTrue();
    assertThat(fallback.path()).isEqualTo(Path.FALLBACK);
    Decision refused = closed.tryAcquire("acme");
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(refused.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    store.down = false;
    Decision back = closed.tryAcquire("acme");
    assertThat(back.path()).isEqualTo(Path.PRIMARY);
    assertThat(shared.peek("acme").remaining()).as("the shared budget counted the two calls the store decided").isEqualTo(3);
  }
}

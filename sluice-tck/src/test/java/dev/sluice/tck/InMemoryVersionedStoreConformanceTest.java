package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.spi.StoreRateLimiter;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import dev.sluice.store.InMemoryVersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** The compare-and-set engine over the in-memory reference store runs the whole kit (the sliding log is memory-only). */
class InMemoryVersionedStoreConformanceTest extends RateLimiterContract {
  private final InMemoryVersionedStore store = new InMemoryVersionedStore();

  /**
   * Coalescing on the engine (issue 18): with a store that takes 200 us a read, 16 threads on one
   * key share reads, and exactly the limit is admitted; {@code maxBatch(1)} reads once per decision.
   */
  @Test
  void sixteenThreadsOnOneHotKeyShareReadsAndAdmitExactlyTheLimit() throws Exception {
    for (int maxBatch : new int[] {StoreRateLimiter.MAX_BATCH, 1}) {
      Switchable slow = new Switchable(store);
      slow.readLatencyNanos = 200_000;
      Policy p = policy("fixed-window", 1_000);
      RateLimiter l = VersionedStoreRateLimiter.builder(p, slow).ticker(newTicker()).maxBatch(maxBatch).build();
      long admitted = hammer(16, 100, i -> l.tryAcquire("hot").allowed());
      assertThat(admitted).as("maxBatch %d", maxBatch).isEqualTo(1_000);
      if (maxBatch == 1) {
        assertThat(slow.reads.get()).as("one read per decision").isGreaterThanOrEqualTo(1_600);
      } else {
        System.out.println("coalescing: 1600 decisions on one key in " + slow.reads.get() + " reads");
        assertThat(slow.reads.get()).as("reads for 1,600 decisions").isLessThan(1_600);
      }
    }
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).issuer(issuer).build());
  }

  @Override protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, RateLimitListener listener) {
    return Optional.of(VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).listener(listener, true).build());
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }

  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) {
    Switchable s = new Switchable(store);
    RateLimiter l = VersionedStoreRateLimiter.builder(policy, s).ticker(ticker).failureMode(mode).build();
    return Optional.of(new Outage() {
      @Override public RateLimiter limiter() {
        return l;
      }

      @Override public void down() {
        s.down = true;
      }

      @Override public void up() {
        s.down = false;
      }

      @Override public void close() {}
    });
  }

  /** A store that fails every call while switched down, and counts (and can slow) its reads. */
  private static final class Switchable implements VersionedStore {
    private final VersionedStore delegate;
    volatile boolean down;
    volatile long readLatencyNanos;
    final AtomicLong reads = new AtomicLong();

    Switchable(VersionedStore delegate) {
      this.delegate = delegate;
    }

    private void check() {
      if (down) {
        throw new StoreException("the store is down");
      }
    }

    @Override public StoredRecord read(String partition, String id, long deadlineNanos) {
      check();
      reads.incrementAndGet();
      if (readLatencyNanos > 0) {
        LockSupport.parkNanos(readLatencyNanos); // a store's round trip, so that calls overlap
      }
      return delegate.read(partition, id, deadlineNanos);
    }

    @Override public boolean compareAndSet(String partition, String id, long expectedVersion, String value, long newVersion,
                                           long expiresAtMicros, long deadlineNanos) {
      check();
      return delegate.compareAndSet(partition, id, expectedVersion, value, newVersion, expiresAtMicros, deadlineNanos);
    }

    @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadlineNanos) {
      check();
      return delegate.list(partition, afterId, limit, deadlineNanos);
    }

    @Override public boolean deleteIfVersion(String partition, String id, long expectedVersion, long deadlineNanos) {
      check();
      return delegate.deleteIfVersion(partition, id, expectedVersion, deadlineNanos);
    }
  }
}

package dev.sluice.tck;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.spi.StoreException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import dev.sluice.store.InMemoryVersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.util.List;
import java.util.Optional;

/** The compare-and-set engine over the in-memory reference store runs the whole kit (the sliding log is memory-only). */
class InMemoryVersionedStoreConformanceTest extends RateLimiterContract {
  private final InMemoryVersionedStore store = new InMemoryVersionedStore();

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return VersionedStoreRateLimiter.builder(policy, store).ticker(ticker).build();
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

  /** A store that fails every call while switched down. */
  private static final class Switchable implements VersionedStore {
    private final VersionedStore delegate;
    volatile boolean down;

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

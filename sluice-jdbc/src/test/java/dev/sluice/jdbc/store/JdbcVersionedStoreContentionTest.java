package dev.sluice.jdbc.store;

import dev.sluice.testing.ManualTicker;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.StoredId;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import dev.sluice.store.VersionedStoreRateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Many threads on one key over the real databases, through a store that injects conflicts: before a
 * third of the compare-and-sets, another writer rewrites the row with a new version (same state), so
 * the engine's write genuinely loses. Nothing is over-admitted, no update is lost, and retries that
 * run out are refused as CONTENTION, closed even under the open failure mode. Coalescing is off, so
 * that 16 threads really race their compare-and-sets.
 */
class JdbcVersionedStoreContentionTest {
  static final long T0 = 1_767_225_600_000_000L;

  @ParameterizedTest @ValueSource(strings = {"postgres", "mariadb"})
  void manyThreadsOnOneKeyWithInjectedConflicts(String name) throws Exception {
    JdbcVersionedStore jdbc = JdbcVersionedStoreDatabases.store(JdbcVersionedStoreTest.db(name), JdbcVersionedStoreDatabases.TEST_TABLE);
    AtomicInteger injected = new AtomicInteger();
    VersionedStore conflicting = new ConflictingStore(jdbc, injected);
    String policyName = JdbcVersionedStoreTest.randomPolicyName();
    int limit = 150, threads = 16, perThread = 20;
    Policy p = Policy.fixedWindow(policyName, limit, Duration.ofMinutes(1));
    VersionedStoreRateLimiter limiter = VersionedStoreRateLimiter.builder(p, conflicting).ticker(ManualTicker.at(T0))
        .maxRetries(1).timeout(Duration.ofSeconds(10)).failureMode(FailureMode.open((pol, r, c) -> {}))
        .maxBatch(1) // every thread its own compare-and-set: coalescing would spare the retries this test is about
        .build();
    AtomicInteger allowed = new AtomicInteger(), exceeded = new AtomicInteger(), contention = new AtomicInteger(), other = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        fs.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < perThread; i++) {
            Decision d = limiter.tryAcquire("hot");
            if (d.allowed() && d.reason() == Reason.WITHIN_LIMIT) {
              allowed.incrementAndGet();
            } else if (!d.allowed() && d.reason() == Reason.LIMIT_EXCEEDED) {
              exceeded.incrementAndGet();
            } else if (!d.allowed() && d.reason() == Reason.CONTENTION && d.path() == Path.FAILURE_MODE) {
              contention.incrementAndGet();
            } else {
              other.incrementAndGet();
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : fs) {
        f.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    StoredRecord r = jdbc.read(StoredId.policy(policyName), StoredId.key(policyName, "hot"), System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
    long stored = Long.parseLong(r.value().split("\\|")[3]);
    assertThat(other.get()).isZero();
    assertThat(allowed.get() + exceeded.get() + contention.get()).isEqualTo(threads * perThread);
    assertThat(injected.get()).isGreaterThan(0);
    assertThat(contention.get()).as("exhausted retries are reported as contention").isGreaterThan(0);
    assertThat(allowed.get()).as("never over the limit").isLessThanOrEqualTo(limit);
    assertThat(stored).as("every admission is counted, and nothing else").isEqualTo(allowed.get());
  }

  /** Delegates to a real store and, before a third of the compare-and-sets, rewrites the row under a new version. */
  static final class ConflictingStore implements VersionedStore {
    private final VersionedStore real;
    private final AtomicInteger injected;

    ConflictingStore(VersionedStore real, AtomicInteger injected) {
      this.real = real;
      this.injected = injected;
    }

    @Override public StoredRecord read(String partition, String id, long deadline) {
      return real.read(partition, id, deadline);
    }

    @Override public boolean compareAndSet(String partition, String id, long expected, String value, long version,
                                           long expiresAt, long deadline) {
      if (expected != ABSENT && ThreadLocalRandom.current().nextInt(3) == 0) {
        StoredRecord cur = real.read(partition, id, deadline);
        if (cur != null && real.compareAndSet(partition, id, cur.version(), cur.value(), cur.version() + 1_000_000,
            cur.expiresAtMicros(), deadline)) {
          injected.incrementAndGet();
        }
      }
      return real.compareAndSet(partition, id, expected, value, version, expiresAt, deadline);
    }

    @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadline) {
      return real.list(partition, afterId, limit, deadline);
    }

    @Override public boolean deleteIfVersion(String partition, String id, long expected, long deadline) {
      return real.deleteIfVersion(partition, id, expected, deadline);
    }
  }
}

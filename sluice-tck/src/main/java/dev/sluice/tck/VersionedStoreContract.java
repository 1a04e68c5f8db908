package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.sluice.spi.StoreTimeoutException;
import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract of a {@link VersionedStore}, checked against a real instance. Subclass it in your
 * tests and supply {@link #newStore()}; when every test passes, the store keeps the SPI's promises
 * and {@code VersionedStoreRateLimiter} over it is as correct as over the reference store (run
 * {@link RateLimiterContract} over the engine on your store too, to see it end to end).
 *
 * <pre>{@code
 * class MyStoreContractTest extends VersionedStoreContract {
 *   @Override protected VersionedStore newStore() { return new MyStore(dataSource); }
 * }
 * }</pre>
 *
 * What it checks: reads return exactly what was written (value byte for byte, version, expiry);
 * compare-and-set succeeds only on the current version, or from absence only when no record exists
 * (even an expired one); a failed compare-and-set or delete changes nothing; delete-if-version; one
 * partition never sees another's records; listings page in ascending id order with an exclusive
 * {@code afterId} and every record appearing exactly once; racing writers lose no update and exactly
 * one of racing creators wins; a call whose deadline has passed either answers correctly or throws
 * {@link StoreTimeoutException}, nothing else.
 *
 * <p>Every test uses fresh random partitions and ids, so a shared database needs no cleaning; the
 * records written are left behind (a few hundred per run, all expired at once).
 */
public abstract class VersionedStoreContract {

  /** A store to test; called once per test. */
  protected abstract VersionedStore newStore();

  /** Releases a store after a test; closes it when it is {@link AutoCloseable}. */
  protected void release(VersionedStore store) throws Exception {
    if (store instanceof AutoCloseable c) {
      c.close();
    }
  }

  /** The deadline given to each call of the tests (except the one about passed deadlines). */
  protected Duration timeout() {
    return Duration.ofSeconds(10);
  }

  private VersionedStore store;
  private String partition;

  @BeforeEach
  final void createStore() {
    store = newStore();
    partition = randomId();
  }

  @AfterEach
  final void releaseStore() throws Exception {
    if (store != null) {
      release(store);
    }
  }

  /** 64 random lowercase hex characters, the shape of every partition and id a store is given. */
  protected static String randomId() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return String.format("%016x%016x%016x%016x", r.nextLong(), r.nextLong(), r.nextLong(), r.nextLong());
  }

  private long deadline() {
    return System.nanoTime() + timeout().toNanos();
  }

  private StoredRecord read(String id) {
    return store.read(partition, id, deadline());
  }

  private boolean cas(String id, long expected, String value, long version, long expiresAt) {
    return store.compareAndSet(partition, id, expected, value, version, expiresAt, deadline());
  }

  // ------------------------------------------------------------------------------------------
  // Read and compare-and-set
  // ------------------------------------------------------------------------------------------

  @Test
  void aRecordNeverWrittenReadsAsNull() {
    assertThat(read(randomId())).isNull();
  }

  @Test
  void aCreatedRecordReadsBackExactlyAsWritten() {
    String id = randomId();
    assertThat(cas(id, VersionedStore.ABSENT, "s1|fixed-window|1767225600000000|3|0|1767225600000000", 17,
        1_767_225_610_000_000L)).isTrue();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "s1|fixed-window|1767225600000000|3|0|1767225600000000", 17,
        1_767_225_610_000_000L));
  }

  @Test
  void creatingFromAbsenceFailsWhenAnyRecordExistsEvenAnExpiredOne() {
    String id = randomId();
    assertThat(cas(id, VersionedStore.ABSENT, "first", 5, 1)).isTrue();
    assertThat(cas(id, VersionedStore.ABSENT, "second", 9, 2)).as("a record exists").isFalse();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "first", 5, 1));
  }

  @Test
  void compareAndSetWritesOnlyOverTheCurrentVersion() {
    String id = randomId();
    assertThat(cas(id, VersionedStore.ABSENT, "v5", 5, 100)).isTrue();
    assertThat(cas(id, 4, "from-4", 6, 200)).as("an older version").isFalse();
    assertThat(cas(id, 6, "from-6", 7, 200)).as("a newer version").isFalse();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "v5", 5, 100));
    assertThat(cas(id, 5, "v6", 6, 200)).isTrue();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "v6", 6, 200));
    assertThat(cas(id, 5, "again-from-5", 7, 300)).as("the version read is gone").isFalse();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "v6", 6, 200));
  }

  @Test
  void compareAndSetOnAnAbsentRecordWithAVersionFails() {
    String id = randomId();
    assertThat(cas(id, 3, "x", 4, 100)).isFalse();
    assertThat(read(id)).isNull();
  }

  @Test
  void versionsAreStoredAsGivenNeverInvented() {
    String id = randomId();
    long[] versions = {1L << 47, 3, (1L << 62) + 12345, 2, Long.MAX_VALUE - 2};
    long expected = VersionedStore.ABSENT;
    for (long v : versions) {
      assertThat(cas(id, expected, "v" + v, v, v)).as("version %d", v).isTrue();
      StoredRecord r = read(id);
      assertThat(r.version()).isEqualTo(v);
      assertThat(r.expiresAtMicros()).isEqualTo(v);
      expected = v;
    }
  }

  @Test
  void valuesRoundTripByteForByte() {
    StringBuilder all = new StringBuilder();
    for (char c = 0x20; c <= 0x7e; c++) {
      all.append(c);
    }
    List<String> values = List.of(all.toString(), "x", " leading and trailing ", "'; DROP TABLE x; --",
        "%_\\\\'\"`", "s1|gcra|1|0|0|1", "x".repeat(VersionedStore.MAX_VALUE_LENGTH),
        (all.toString() + all + all).substring(0, VersionedStore.MAX_VALUE_LENGTH));
    for (String v : values) {
      String id = randomId();
      assertThat(cas(id, VersionedStore.ABSENT, v, 1, 0)).isTrue();
      assertThat(read(id).value()).as("value of %d characters", v.length()).isEqualTo(v);
    }
  }

  @Test
  void expiriesRoundTripAcrossTheirRange() {
    for (long e : new long[] {0, 1, 1_767_225_600_000_000L, 1L << 52, 1L << 53}) {
      String id = randomId();
      assertThat(cas(id, VersionedStore.ABSENT, "e", 1, e)).isTrue();
      assertThat(read(id).expiresAtMicros()).isEqualTo(e);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Delete
  // ------------------------------------------------------------------------------------------

  @Test
  void deleteRemovesOnlyTheVersionRead() {
    String id = randomId();
    assertThat(store.deleteIfVersion(partition, id, 1, deadline())).as("nothing to delete").isFalse();
    assertThat(cas(id, VersionedStore.ABSENT, "v1", 1, 10)).isTrue();
    assertThat(cas(id, 1, "v2", 2, 10)).isTrue();
    assertThat(store.deleteIfVersion(partition, id, 1, deadline())).as("an older version").isFalse();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "v2", 2, 10));
    assertThat(store.deleteIfVersion(partition, id, 2, deadline())).isTrue();
    assertThat(read(id)).isNull();
    assertThat(store.deleteIfVersion(partition, id, 2, deadline())).as("already gone").isFalse();
    assertThat(cas(id, 2, "from-deleted", 3, 10)).as("a deleted record has no version").isFalse();
    assertThat(cas(id, VersionedStore.ABSENT, "again", 900, 10)).as("created again from absence").isTrue();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "again", 900, 10));
  }

  // ------------------------------------------------------------------------------------------
  // Partitions and listing
  // ------------------------------------------------------------------------------------------

  @Test
  void partitionsAreIndependent() {
    String other = randomId();
    String id = randomId();
    assertThat(cas(id, VersionedStore.ABSENT, "here", 1, 10)).isTrue();
    assertThat(store.read(other, id, deadline())).as("the same id in another partition").isNull();
    assertThat(store.compareAndSet(other, id, VersionedStore.ABSENT, "there", 7, 20, deadline())).isTrue();
    assertThat(store.deleteIfVersion(other, id, 1, deadline())).isFalse();
    assertThat(read(id)).isEqualTo(new StoredRecord(id, "here", 1, 10));
    assertThat(store.read(other, id, deadline())).isEqualTo(new StoredRecord(id, "there", 7, 20));
    assertThat(store.list(other, null, 10, deadline())).containsExactly(new StoredRecord(id, "there", 7, 20));
    assertThat(store.deleteIfVersion(partition, id, 1, deadline())).isTrue();
    assertThat(store.read(other, id, deadline())).isNotNull();
  }

  @Test
  void anEmptyPartitionListsNothing() {
    assertThat(store.list(randomId(), null, 10, deadline())).isEmpty();
    assertThat(store.list(randomId(), randomId(), 10, deadline())).isEmpty();
  }

  @Test
  void listingPagesInAscendingIdOrderAndShowsEveryRecordOnce() {
    TreeMap<String, StoredRecord> written = new TreeMap<>();
    for (int i = 0; i < 23; i++) {
      String id = randomId();
      long v = 1 + i;
      assertThat(cas(id, VersionedStore.ABSENT, "r" + i, v, 1_000 + i)).isTrue();
      written.put(id, new StoredRecord(id, "r" + i, v, 1_000 + i));
    }
    // A record in another partition must never show up.
    store.compareAndSet(randomId(), written.firstKey(), VersionedStore.ABSENT, "elsewhere", 1, 1, deadline());

    List<StoredRecord> seen = new ArrayList<>();
    String after = null;
    int pages = 0;
    while (true) {
      List<StoredRecord> page = store.list(partition, after, 5, deadline());
      pages++;
      assertThat(page.size()).isLessThanOrEqualTo(5);
      for (StoredRecord r : page) {
        if (after != null) {
          assertThat(r.id()).as("ascending, after %s", after).isGreaterThan(after);
        }
        after = r.id();
      }
      seen.addAll(page);
      if (page.size() < 5) {
        break;
      }
      assertThat(pages).as("listing terminates").isLessThan(50);
    }
    assertThat(pages).isEqualTo(5);
    assertThat(seen).containsExactlyElementsOf(written.values());

    String middle = new ArrayList<>(written.keySet()).get(10);
    assertThat(store.list(partition, middle, 100, deadline())).containsExactlyElementsOf(written.tailMap(middle, false).values());
    assertThat(store.list(partition, written.lastKey(), 100, deadline())).isEmpty();
    assertThat(store.list(partition, null, 1, deadline())).containsExactly(written.firstEntry().getValue());
  }

  // ------------------------------------------------------------------------------------------
  // Concurrency
  // ------------------------------------------------------------------------------------------

  @Test
  void racingWritersLoseNoUpdate() throws Exception {
    String id = randomId();
    assertThat(cas(id, VersionedStore.ABSENT, "0", 1, 0)).isTrue();
    int threads = 8, perThread = 25;
    AtomicInteger conflicts = new AtomicInteger();
    run(threads, t -> {
      for (int i = 0; i < perThread; i++) {
        for (int attempt = 0; ; attempt++) {
          StoredRecord r = read(id);
          long n = Long.parseLong(r.value());
          if (cas(id, r.version(), Long.toString(n + 1), r.version() + 1, 0)) {
            break;
          }
          conflicts.incrementAndGet();
          assertThat(attempt).as("a writer makes progress").isLessThan(10_000);
        }
      }
    });
    StoredRecord last = read(id);
    assertThat(last.value()).isEqualTo(Integer.toString(threads * perThread));
    assertThat(last.version()).isEqualTo(1 + threads * perThread);
  }

  @Test
  void exactlyOneOfRacingCreatorsWins() throws Exception {
    int threads = 8;
    for (int round = 0; round < 10; round++) {
      String id = randomId();
      CyclicBarrier barrier = new CyclicBarrier(threads);
      AtomicInteger wins = new AtomicInteger();
      Set<Long> winners = java.util.Collections.synchronizedSet(new HashSet<>());
      run(threads, t -> {
        barrier.await(30, TimeUnit.SECONDS);
        if (cas(id, VersionedStore.ABSENT, "by-" + t, 100 + t, 0)) {
          wins.incrementAndGet();
          winners.add(100L + t);
        }
        return;
      });
      assertThat(wins.get()).as("round %d", round).isEqualTo(1);
      StoredRecord r = read(id);
      assertThat(winners).containsExactly(r.version());
      assertThat(r.value()).isEqualTo("by-" + (r.version() - 100));
    }
  }

  @Test
  void racingDeletesOfOneVersionDeleteOnce() throws Exception {
    int threads = 8;
    for (int round = 0; round < 10; round++) {
      String id = randomId();
      assertThat(cas(id, VersionedStore.ABSENT, "doomed", 42, 0)).isTrue();
      CyclicBarrier barrier = new CyclicBarrier(threads);
      AtomicInteger deleted = new AtomicInteger();
      run(threads, t -> {
        barrier.await(30, TimeUnit.SECONDS);
        if (store.deleteIfVersion(partition, id, 42, deadline())) {
          deleted.incrementAndGet();
        }
      });
      assertThat(deleted.get()).isEqualTo(1);
      assertThat(read(id)).isNull();
    }
  }

  // ------------------------------------------------------------------------------------------
  // Deadlines
  // ------------------------------------------------------------------------------------------

  @Test
  void aPassedDeadlineEitherAnswersCorrectlyOrTimesOut() {
    String id = randomId();
    assertThat(cas(id, VersionedStore.ABSENT, "before", 1, 5)).isTrue();
    long passed = System.nanoTime() - TimeUnit.SECONDS.toNanos(1);

    Object read = attempt(() -> store.read(partition, id, passed));
    if (!(read instanceof StoreTimeoutException)) {
      assertThat(read).isEqualTo(new StoredRecord(id, "before", 1, 5));
    }
    Object written = attempt(() -> store.compareAndSet(partition, id, 1, "late", 2, 6, passed));
    StoredRecord now = read(id);
    if (written instanceof StoreTimeoutException) {
      assertThat(now).as("a timed-out write either landed or did not").isIn(
          new StoredRecord(id, "before", 1, 5), new StoredRecord(id, "late", 2, 6));
    } else {
      assertThat(written).isEqualTo(true);
      assertThat(now).isEqualTo(new StoredRecord(id, "late", 2, 6));
    }
    Object listed = attempt(() -> store.list(partition, null, 10, passed));
    if (!(listed instanceof StoreTimeoutException)) {
      assertThat(listed).isEqualTo(List.of(now));
    }
    Object deleted = attempt(() -> store.deleteIfVersion(partition, id, now.version(), passed));
    if (!(deleted instanceof StoreTimeoutException)) {
      assertThat(deleted).isEqualTo(true);
      assertThat(read(id)).isNull();
    }
  }

  private static Object attempt(java.util.concurrent.Callable<?> call) {
    Object[] result = new Object[1];
    Throwable t = catchThrowable(() -> result[0] = call.call());
    if (t != null) {
      assertThat(t).as("a call past its deadline may only time out").isInstanceOf(StoreTimeoutException.class);
      return t;
    }
    return result[0];
  }

  // ------------------------------------------------------------------------------------------

  @FunctionalInterface
  private interface Body {
    void run(int thread) throws Exception;
  }

  private static void run(int threads, Body body) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int n = t;
        fs.add(pool.submit(() -> {
          start.await();
          body.run(n);
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
  }
}

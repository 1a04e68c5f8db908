package dev.sluice.store;

import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An {@link InMemoryVersionedStore} that counts its calls and lets a test inject trouble before each
 * one: a hook may throw (an outage, a timeout), sleep (a slow store) or write behind the caller's
 * back (a real conflict).
 */
final class FaultyStore implements VersionedStore {
  interface Hook {
    void before(String op, String partition, String id, long deadlineNanos);
  }

  final InMemoryVersionedStore delegate = new InMemoryVersionedStore();
  final AtomicInteger reads = new AtomicInteger();
  final AtomicInteger writes = new AtomicInteger();
  final AtomicInteger lists = new AtomicInteger();
  final AtomicInteger deletes = new AtomicInteger();
  final AtomicLong lastDeadline = new AtomicLong();
  volatile Hook hook = (op, p, id, d) -> {};
  /** When set, a compare-and-set is applied and then its answer is lost (thrown as a store failure). */
  volatile boolean loseCasReply;

  @Override public StoredRecord read(String partition, String id, long deadlineNanos) {
    reads.incrementAndGet();
    lastDeadline.set(deadlineNanos);
    hook.before("read", partition, id, deadlineNanos);
    return delegate.read(partition, id, deadlineNanos);
  }

  @Override public boolean compareAndSet(String partition, String id, long expectedVersion, String value, long newVersion,
                                         long expiresAtMicros, long deadlineNanos) {
    writes.incrementAndGet();
    lastDeadline.set(deadlineNanos);
    hook.before("cas", partition, id, deadlineNanos);
    boolean done = delegate.compareAndSet(partition, id, expectedVersion, value, newVersion, expiresAtMicros, deadlineNanos);
    if (loseCasReply) {
      throw new dev.sluice.spi.StoreException("the reply was lost (the write " + (done ? "applied" : "did not apply") + ")");
    }
    return done;
  }

  @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadlineNanos) {
    lists.incrementAndGet();
    hook.before("list", partition, afterId, deadlineNanos);
    return delegate.list(partition, afterId, limit, deadlineNanos);
  }

  @Override public boolean deleteIfVersion(String partition, String id, long expectedVersion, long deadlineNanos) {
    deletes.incrementAndGet();
    hook.before("delete", partition, id, deadlineNanos);
    return delegate.deleteIfVersion(partition, id, expectedVersion, deadlineNanos);
  }

  /** Rewrites the record with the same value and a new version: a conflict that changes no state. */
  void bumpVersion(String partition, String id) {
    StoredRecord r = delegate.read(partition, id, 0);
    if (r != null) {
      delegate.compareAndSet(partition, id, r.version(), r.value(), r.version() + 1_000_000, r.expiresAtMicros(), 0);
    }
  }

  void resetCounts() {
    reads.set(0);
    writes.set(0);
    lists.set(0);
    deletes.set(0);
  }
}

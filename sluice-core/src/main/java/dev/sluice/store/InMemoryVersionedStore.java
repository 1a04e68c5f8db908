package dev.sluice.store;

import dev.sluice.spi.StoredRecord;
import dev.sluice.spi.VersionedStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The reference {@link VersionedStore}: records in memory, for tests (Sluice's and yours) and for a
 * single process that wants the versioned-store engine without a database. Thread-safe and lock-free:
 * every compare-and-set is one {@link ConcurrentMap#replace(Object, Object, Object)} or
 * {@link ConcurrentMap#putIfAbsent}. Never expires records on its own (a sweep removes them) and is
 * unbounded: it is not a cache.
 *
 * <p>It is strict about its arguments, so that a test against it catches a caller that breaks the SPI:
 * partitions and ids must be 64 lowercase hex characters, values printable ASCII of 1 to
 * {@link #MAX_VALUE_LENGTH} characters, written versions positive.
 * A violation throws {@link IllegalArgumentException}. Deadlines are ignored: nothing here waits.
 */
public final class InMemoryVersionedStore implements VersionedStore {
  private final ConcurrentMap<String, ConcurrentNavigableMap<String, StoredRecord>> partitions = new ConcurrentHashMap<>();

  @Override public StoredRecord read(String partition, String id, long deadlineNanos) {
    checkId("partition", partition);
    checkId("id", id);
    Map<String, StoredRecord> p = partitions.get(partition);
    return p == null ? null : p.get(id);
  }

  @Override public boolean compareAndSet(String partition, String id, long expectedVersion, String value, long newVersion,
                                         long expiresAtMicros, long deadlineNanos) {
    checkId("partition", partition);
    checkId("id", id);
    checkValue(value);
    if (expectedVersion < 0) {
      throw new IllegalArgumentException("expected version " + expectedVersion + " is negative; use a version read or ABSENT (0)");
    }
    if (newVersion <= 0 || newVersion == expectedVersion) {
      throw new IllegalArgumentException("new version " + newVersion + " must be positive and differ from the expected version "
          + expectedVersion);
    }
    ConcurrentNavigableMap<String, StoredRecord> p = partitions.computeIfAbsent(partition, k -> new ConcurrentSkipListMap<>());
    StoredRecord next = new StoredRecord(id, value, newVersion, expiresAtMicros);
    if (expectedVersion == ABSENT) {
      return p.putIfAbsent(id, next) == null;
    }
    StoredRecord cur = p.get(id);
    return cur != null && cur.version() == expectedVersion && p.replace(id, cur, next);
  }

  @Override public List<StoredRecord> list(String partition, String afterId, int limit, long deadlineNanos) {
    checkId("partition", partition);
    if (afterId != null) {
      checkId("afterId", afterId);
    }
    if (limit < 1) {
      throw new IllegalArgumentException("limit " + limit + " is not positive; ask for at least one record");
    }
    ConcurrentNavigableMap<String, StoredRecord> p = partitions.get(partition);
    if (p == null) {
      return List.of();
    }
    List<StoredRecord> page = new ArrayList<>(Math.min(limit, 256));
    for (StoredRecord r : (afterId == null ? p : p.tailMap(afterId, false)).values()) {
      page.add(r);
      if (page.size() == limit) {
        break;
      }
    }
    return page;
  }

  @Override public boolean deleteIfVersion(String partition, String id, long expectedVersion, long deadlineNanos) {
    checkId("partition", partition);
    checkId("id", id);
    Map<String, StoredRecord> p = partitions.get(partition);
    if (p == null) {
      return false;
    }
    StoredRecord cur = p.get(id);
    return cur != null && cur.version() == expectedVersion && p.remove(id, cur);
  }

  /** Records held, across all partitions (a snapshot; for tests). */
  public int size() {
    int n = 0;
    for (Map<String, StoredRecord> p : partitions.values()) {
      n += p.size();
    }
    return n;
  }

  /**
   * Stores {@code value} under {@code id} unconditionally, as if another program wrote it. For tests
   * that plant a corrupt or foreign record; the value is not validated.
   */
  public void put(String partition, String id, String value, long version, long expiresAtMicros) {
    partitions.computeIfAbsent(partition, k -> new ConcurrentSkipListMap<>())
        .put(id, new StoredRecord(id, value, version, expiresAtMicros));
  }

  private static void checkId(String what, String id) {
    if (id == null || id.length() != 64) {
      throw new IllegalArgumentException(what + " " + id + " is not 64 lowercase hex characters (a StoredId)");
    }
    for (int i = 0; i < 64; i++) {
      char c = id.charAt(i);
      if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
        throw new IllegalArgumentException(what + " " + id + " is not 64 lowercase hex characters (a StoredId)");
      }
    }
  }

  private static void checkValue(String value) {
    if (value == null || value.isEmpty() || value.length() > MAX_VALUE_LENGTH) {
      throw new IllegalArgumentException("value of " + (value == null ? "null" : value.length() + " characters")
          + " is outside 1.." + MAX_VALUE_LENGTH + " characters");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw new IllegalArgumentException("value has character 0x" + Integer.toHexString(c) + " at index " + i
            + "; values are printable ASCII (0x20..0x7e)");
      }
    }
  }
}

package dev.sluice.server;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The tickets already refunded, so that a ticket refunds once. Bounded: an entry is kept only until
 * its ticket expires (after that the ticket is refused as expired anyway), and at most
 * {@code capacity} unexpired entries are held. When that many live tickets were refunded recently,
 * a further refund is refused rather than forgetting an entry: a refused refund leaves the limiter
 * stricter, a forgotten entry would let a ticket refund twice.
 */
final class SpentTickets implements SpentSet {
  private final ConcurrentHashMap<String, Long> spent = new ConcurrentHashMap<>();
  private final AtomicInteger size = new AtomicInteger();
  private final int capacity;

  SpentTickets(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("spent-ticket capacity " + capacity + " is not positive; it must be at least 1");
    }
    this.capacity = capacity;
  }

  /** Records {@code mac} as spent until {@code expiresAtMicros}. */
  @Override public Mark mark(String mac, long expiresAtMicros, long nowMicros) {
    if (size.get() >= capacity) {
      purge(nowMicros);
      if (size.get() >= capacity) {
        return spent.containsKey(mac) ? Mark.ALREADY_SPENT : Mark.FULL;
      }
    }
    if (spent.putIfAbsent(mac, expiresAtMicros) != null) {
      return Mark.ALREADY_SPENT;
    }
    size.incrementAndGet();
    return Mark.MARKED;
  }

  /** Forgets {@code mac} after a refund the store could not apply, so that it may be retried. */
  @Override public void unmark(String mac) {
    if (spent.remove(mac) != null) {
      size.decrementAndGet();
    }
  }

  int size() {
    return size.get();
  }

  private synchronized void purge(long nowMicros) {
    for (Iterator<Map.Entry<String, Long>> it = spent.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<String, Long> e = it.next();
      if (e.getValue() < nowMicros && spent.remove(e.getKey(), e.getValue())) {
        size.decrementAndGet();
      }
    }
  }
}

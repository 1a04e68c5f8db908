package dev.sluice.store;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** The engine's deadline clock and retry pause, faked: a park advances the clock by what it asked for. */
final class FakePause implements VersionedStoreRateLimiter.Pause {
  final AtomicLong now = new AtomicLong(1_000_000_000L);
  final AtomicLong parked = new AtomicLong();
  final AtomicInteger parks = new AtomicInteger();

  @Override public long nanoTime() {
    return now.get();
  }

  @Override public boolean park(long nanos) {
    parks.incrementAndGet();
    parked.addAndGet(nanos);
    now.addAndGet(nanos);
    return true;
  }

  void advance(long nanos) {
    now.addAndGet(nanos);
  }
}

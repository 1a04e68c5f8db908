package dev.sluice.server;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * Whether the store answers, for {@code GET /readyz}: the last {@link Store#probe()}, refreshed at
 * most once per interval whatever the rate of probes, by the one request that finds it stale (the
 * others meanwhile get the last answer). A probe never asks a limiter, so it is never a decision.
 */
final class Readiness {
  /** What the last probe found: {@code reason} null when the store answered. */
  record Status(String reason, long atNanos) {
    boolean ready() {
      return reason == null;
    }
  }

  private final Store store;
  private final long intervalNanos;
  private final LongSupplier nanoTime;
  private final AtomicBoolean probing = new AtomicBoolean();
  private volatile Status last;

  Readiness(Store store, long intervalNanos, LongSupplier nanoTime) {
    this.store = store;
    this.intervalNanos = intervalNanos;
    this.nanoTime = nanoTime;
  }

  /** Probes now, on the caller's thread (at start-up; the banner says what it found). */
  Status probe() {
    Status s = new Status(store.probe(), nanoTime.getAsLong());
    last = s;
    return s;
  }

  Status status() {
    Status s = last;
    if ((s == null || nanoTime.getAsLong() - s.atNanos() >= intervalNanos) && probing.compareAndSet(false, true)) {
      try {
        s = probe();
      } finally {
        probing.set(false);
      }
    }
    return s != null ? s : new Status("store_unavailable", nanoTime.getAsLong()); // first probe still running
  }
}

package dev.sluice.kernel;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.RateLimiter;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * Whether a front end's store answers, the one place both probes live.
 *
 * <ul>
 *   <li>An instance is the readiness of a {@link Store} (the service's {@code GET /readyz}): the last
 *       {@link Store#probe()}, refreshed at most once per interval whatever the rate of probes, by the
 *       one caller that finds it stale (the others meanwhile get the last answer). It never asks a
 *       limiter, so it is never a decision.</li>
 *   <li>{@link #peek(RateLimiter, String)} is the health of a store as its limiters see it (the Spring
 *       starter's health contributor): a peek, never a charge; down only when the store could not
 *       answer (the failure mode or the fallback decided), never because a key is at its limit.</li>
 * </ul>
 */
public final class Readiness {
  /**
   * What a probe found: {@code reason} null when the store answered, else the reason in the API's
   * words ({@code store_unavailable}, {@code timeout}); {@code path} the decision path a peek took
   * ({@code failure_mode}, {@code fallback}), null for a store probe.
   */
  public record Status(String reason, String path, long atNanos) {
    public boolean ready() {
      return reason == null;
    }
  }

  private final Store store;
  private final long intervalNanos;
  private final LongSupplier nanoTime;
  private final AtomicBoolean probing = new AtomicBoolean();
  private volatile Status last;

  /** The readiness of {@code store}, probed at most once per {@code intervalNanos} of {@code nanoTime}. */
  public Readiness(Store store, long intervalNanos, LongSupplier nanoTime) {
    this.store = store;
    this.intervalNanos = intervalNanos;
    this.nanoTime = nanoTime;
  }

  /** Probes now, on the caller's thread (at start-up, where a banner says what it found). */
  public Status probe() {
    Status s = new Status(store.probe(), null, nanoTime.getAsLong());
    last = s;
    return s;
  }

  /** The last probe's answer, probing first when it is older than the interval and no other caller is. */
  public Status status() {
    Status s = last;
    if ((s == null || nanoTime.getAsLong() - s.atNanos() >= intervalNanos) && probing.compareAndSet(false, true)) {
      try {
        s = probe();
      } finally {
        probing.set(false);
      }
    }
    return s != null ? s : new Status("store_unavailable", null, nanoTime.getAsLong()); // first probe still running
  }

  /**
   * A peek at {@code key} under {@code limiter}'s own policy: ready when the store decided it
   * ({@link Path#PRIMARY}), whatever it decided; else the reason and path, in the API's words.
   */
  public static Status peek(RateLimiter limiter, String key) {
    Decision d = limiter.peek(key, limiter.policy());
    if (d.path() == Path.PRIMARY) {
      return new Status(null, null, System.nanoTime());
    }
    return new Status(DecisionWords.of(d.reason()), DecisionWords.of(d.path()), System.nanoTime());
  }
}

package dev.sluice.kernel;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The one rule of a metric tag that carries request values: at most {@code max} distinct values get
 * series of their own, first come first served and kept for good; every later one is counted under
 * {@link #OTHER}, so that no caller can grow a registry without end (Envoy mode's stat keys, the
 * Spring starter's {@code sluice.http.metrics.tags}). Sluice never tags by key; a bounded value is for
 * a plan, a route, a tenant. Thread-safe; the cap is exact under any concurrency.
 */
public final class BoundedValues {
  /** The value every one past the cap is counted under. */
  public static final String OTHER = "_other";

  private final int max;
  private final Set<Object> seen = ConcurrentHashMap.newKeySet();

  /** At most {@code max} (at least 1) distinct values. */
  public BoundedValues(int max) {
    if (max < 1) {
      throw new IllegalArgumentException("a cap of " + max + " distinct values is below 1");
    }
    this.max = max;
  }

  /** Whether {@code value} has (or now gets) a series of its own; false past the cap. */
  public boolean admits(Object value) {
    if (seen.contains(value)) {
      return true;
    }
    synchronized (seen) {
      if (seen.contains(value)) {
        return true;
      }
      if (seen.size() >= max) {
        return false;
      }
      seen.add(value);
      return true;
    }
  }

  /** {@code value} when it {@linkplain #admits has a series}, else {@link #OTHER}. */
  public String bound(String value) {
    return admits(value) ? value : OTHER;
  }

  /** Distinct values admitted so far. */
  public int distinct() {
    return seen.size();
  }
}

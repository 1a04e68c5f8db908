package dev.sluice.spi;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.internal.AlgorithmKind;
import java.util.Arrays;
import java.util.Set;

/**
 * What a {@link Backend} can do, stated once as a value: the algorithms it runs, the ones whose
 * acquires it decides in a {@link Backend#stepBatch batch} (request coalescing), whether its
 * asynchronous steps hold no thread, and whether it reports its own store calls to the listener.
 * Immutable; derive variants with the {@code with} methods.
 *
 * <pre>{@code
 * Capabilities.of("DynamoDB", Algorithm.FixedWindow.class, Algorithm.TokenBucket.class).withAsyncSteps();
 * }</pre>
 */
public final class Capabilities {
  private final String store;
  private final Set<Class<? extends Algorithm>> runs;
  private final Set<Class<? extends Algorithm>> batches;
  private final boolean asyncSteps;
  private final boolean reportsOwnStoreCalls;

  private Capabilities(String store, Set<Class<? extends Algorithm>> runs, Set<Class<? extends Algorithm>> batches,
                       boolean asyncSteps, boolean reportsOwnStoreCalls) {
    this.store = store;
    this.runs = runs;
    this.batches = batches;
    this.asyncSteps = asyncSteps;
    this.reportsOwnStoreCalls = reportsOwnStoreCalls;
  }

  /**
   * A backend named {@code store} (in messages: "Redis", "PostgreSQL") that runs {@code algorithms},
   * one step at a time, synchronously, no batches.
   */
  @SafeVarargs
  public static Capabilities of(String store, Class<? extends Algorithm>... algorithms) {
    if (store == null || store.isBlank()) {
      throw new IllegalArgumentException("store name '" + store + "' is blank; name the store for messages, e.g. \"Redis\"");
    }
    if (algorithms.length == 0) {
      throw new IllegalArgumentException("a backend of " + store + " runs no algorithm; name at least one");
    }
    return new Capabilities(store, Set.of(algorithms), Set.of(), false, false);
  }

  /** Every algorithm a store with a fixed-size state per key can hold: all but the exact sliding log. */
  public static Capabilities fixedSize(String store) {
    return of(store, Algorithm.FixedWindow.class, Algorithm.SlidingWindow.class, Algorithm.TokenBucket.class, Algorithm.Gcra.class);
  }

  /**
   * This, deciding coalesced acquires of {@code algorithms} (each one it runs) in one
   * {@link Backend#stepBatch}; none given: every algorithm it runs.
   */
  @SafeVarargs
  public final Capabilities withBatches(Class<? extends Algorithm>... algorithms) {
    Set<Class<? extends Algorithm>> b = algorithms.length == 0 ? runs : Set.of(algorithms);
    if (!runs.containsAll(b)) {
      throw new IllegalArgumentException("a backend of " + store + " batches " + Arrays.toString(algorithms)
          + " but runs only " + runs + "; it can batch only what it runs");
    }
    return new Capabilities(store, runs, b, asyncSteps, reportsOwnStoreCalls);
  }

  /**
   * This, with {@link Backend#stepAsync} and {@link Backend#stepBatchAsync} that hold no caller's
   * thread (a native asynchronous client, or the backend's own executor): async acquires and
   * coalesced batches then go to the store asynchronously, each waiting request keeping its own
   * deadline; otherwise the oldest waiting caller runs a batch on its own thread and only
   * synchronous acquires are coalesced.
   */
  public Capabilities withAsyncSteps() {
    return new Capabilities(store, runs, batches, true, reportsOwnStoreCalls);
  }

  /** This, for a backend whose steps tell the listener about each store call themselves (several per step). */
  public Capabilities withOwnStoreCallReports() {
    return new Capabilities(store, runs, batches, asyncSteps, true);
  }

  /** The store's name in messages. */
  public String store() {
    return store;
  }

  /** Whether it runs {@code algorithm}. */
  public boolean runs(Algorithm algorithm) {
    return runs.contains(algorithm.getClass());
  }

  /** Whether it decides coalesced acquires of {@code algorithm} in one batch. */
  public boolean batches(Algorithm algorithm) {
    return !batches.isEmpty() && batches.contains(algorithm.getClass());
  }

  /** Whether it decides any batch at all. */
  public boolean batchesAny() {
    return !batches.isEmpty();
  }

  public boolean asyncSteps() {
    return asyncSteps;
  }

  public boolean reportsOwnStoreCalls() {
    return reportsOwnStoreCalls;
  }

  /** {@code policy}, when this backend runs its algorithm; else the core's one message naming what it runs. */
  public Policy require(Policy policy) {
    if (!runs(policy.algorithm())) {
      throw AlgorithmKind.notRun(policy, store, runs);
    }
    return policy;
  }

  @Override public String toString() {
    return "Capabilities[" + store + ", runs=" + runs.size() + " algorithms, batches=" + batches.size()
        + ", asyncSteps=" + asyncSteps + ", reportsOwnStoreCalls=" + reportsOwnStoreCalls + "]";
  }
}

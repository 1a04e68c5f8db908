package dev.sluice.benchmarks;

import com.github.benmanes.caffeine.cache.LoadingCache;
import dev.sluice.memory.MemoryRateLimiter;
import io.github.bucket4j.Bucket;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.lang.management.MemoryMXBean;
import java.util.Arrays;
import java.util.function.Supplier;
import org.openjdk.jol.info.GraphLayout;

/**
 * Bytes of heap per tracked key, key strings included, for Sluice's {@link MemoryRateLimiter} and
 * for a Caffeine cache of Bucket4j buckets. Not a JMH benchmark: it fills a limiter with {@code n}
 * keys ({@code "user:<i>"}, made on the fly so the limiter holds the only reference), and measures
 * the filled limiter two ways: (1) used heap after {@code System.gc()} (a few times, until it
 * settles), filled minus empty, via {@link MemoryMXBean}; (2) JOL's walk of the object graph reachable
 * from the limiter, filled minus empty. Both divided by {@code n}. Prints one line per limiter:
 * {@code HEAP <name> <mxbean bytes/key> <jol bytes/key>}.
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.HeapPerKey 100000}
 */
public final class HeapPerKey {
  static {
    // JOL needs field offsets of JDK classes; without -Djdk.attach.allowAttachSelf it can find them
    // itself this way (read when JOL first loads, so set before any JOL class is touched).
    if (System.getProperty("jol.magicFieldOffset") == null) {
      System.setProperty("jol.magicFieldOffset", "true");
    }
  }

  private HeapPerKey() {}

  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    report("sluice", n, () -> Limiters.sluice(Limiters.Load.KEYED, n), HeapPerKey::fillSluice);
    report("caffeineOfBucket4j", n, () -> Limiters.caffeineOfBuckets(Limiters.Load.KEYED, n), HeapPerKey::fillCaffeine);
  }

  static void fillSluice(MemoryRateLimiter limiter, int n) {
    for (int i = 0; i < n; i++) {
      if (!limiter.tryAcquire("user:" + i, Limiters.Load.KEYED_SPEND).allowed()) {
        throw new IllegalStateException("refused user:" + i);
      }
    }
    if (limiter.trackedKeys() != n) {
      throw new IllegalStateException("tracked " + limiter.trackedKeys() + " keys, expected " + n);
    }
  }

  static void fillCaffeine(LoadingCache<String, Bucket> cache, int n) {
    for (int i = 0; i < n; i++) {
      cache.get("user:" + i).tryConsume(Limiters.Load.KEYED_SPEND);
    }
    cache.cleanUp();
    if (cache.estimatedSize() != n) {
      throw new IllegalStateException("cached " + cache.estimatedSize() + " keys, expected " + n);
    }
  }

  interface Filler<T> {
    void fill(T limiter, int n);
  }

  /** Bytes per key by MXBean (median of 3 rounds) and by JOL. */
  static <T> double[] measure(int n, Supplier<T> make, Filler<T> filler) {
    double[] mx = new double[3];
    for (int round = 0; round < mx.length; round++) {
      long before = settledUsedHeap();
      T limiter = make.get();
      filler.fill(limiter, n);
      long after = settledUsedHeap();
      mx[round] = (double) (after - before) / n;
      Reference.reachabilityFence(limiter);
    }
    Arrays.sort(mx);
    double jol;
    T empty = make.get();
    long emptySize = GraphLayout.parseInstance(empty).totalSize();
    T full = make.get();
    filler.fill(full, n);
    jol = (double) (GraphLayout.parseInstance(full).totalSize() - emptySize) / n;
    return new double[] {mx[1], jol};
  }

  static <T> void report(String name, int n, Supplier<T> make, Filler<T> filler) {
    double[] r = measure(n, make, filler);
    System.out.printf("HEAP %s %.1f %.1f%n", name, r[0], r[1]);
  }

  /** Used heap after full collections, repeated until two readings agree within 64 KiB (at most 8). */
  static long settledUsedHeap() {
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    long last = Long.MAX_VALUE;
    for (int i = 0; i < 8; i++) {
      System.gc();
      long used = mem.getHeapMemoryUsage().getUsed();
      if (Math.abs(used - last) < 64 * 1024) {
        return used;
      }
      last = used;
    }
    return last;
  }
}

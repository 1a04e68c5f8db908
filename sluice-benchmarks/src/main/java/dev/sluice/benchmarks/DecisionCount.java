package dev.sluice.benchmarks;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntPredicate;

/** Counts what a store saw while some threads made a number of checks (for the round-trip counts). */
final class DecisionCount {
  private DecisionCount() {}

  static int pick(int keys) {
    return keys == 1 ? 0 : ThreadLocalRandom.current().nextInt(keys);
  }

  interface Counter {
    long sum();
  }

  /** Commands sent while {@code threads} threads make {@code decisions} checks between them. */
  static long count(Counter commands, int threads, int decisions, IntPredicate check) throws InterruptedException {
    long before = commands.sum();
    CountDownLatch done = new CountDownLatch(threads);
    int[] refused = new int[threads];
    for (int t = 0; t < threads; t++) {
      int mine = decisions / threads + (t < decisions % threads ? 1 : 0);
      int slot = t;
      Thread th = new Thread(() -> {
        try {
          for (int i = 0; i < mine; i++) {
            if (!check.test(i)) {
              refused[slot]++;
            }
          }
        } finally {
          done.countDown();
        }
      });
      th.start();
    }
    done.await();
    for (int r : refused) {
      if (r > 0) {
        throw new IllegalStateException(r + " generous checks were refused: the count would not be of allowed decisions");
      }
    }
    return commands.sum() - before;
  }

  /** Checks every key once on 16 threads (not counted), so that a count afterwards sees known keys only. */
  static void touchAll(int keys, IntPredicate checkKey) throws InterruptedException {
    int threads = 16;
    CountDownLatch done = new CountDownLatch(threads);
    for (int t = 0; t < threads; t++) {
      int first = t;
      new Thread(() -> {
        try {
          for (int i = first; i < keys; i += threads) {
            checkKey.test(i);
          }
        } finally {
          done.countDown();
        }
      }).start();
    }
    done.await();
  }
}

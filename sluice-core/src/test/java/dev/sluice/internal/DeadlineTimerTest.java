package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The timer wheel behind asynchronous deadlines. What is asserted holds on any machine, however
 * loaded: a task never runs before its deadline, runs exactly once unless cancelled, never runs
 * once cancelled, and runs off the timer's own thread. How late it runs is a figure of the
 * deadline storm test (sluice-redis), not an assertion here.
 */
class DeadlineTimerTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  @Test void tasksRunOnceAtOrAfterTheirDeadlineOffTheTimerThread() throws Exception {
    int n = 20_000;
    CountDownLatch done = new CountDownLatch(n);
    AtomicLong early = new AtomicLong();
    AtomicInteger runs = new AtomicInteger();
    Set<String> threads = ConcurrentHashMap.newKeySet();
    Thread[] senders = new Thread[4];
    for (int s = 0; s < senders.length; s++) {
      senders[s] = new Thread(() -> {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        for (int i = 0; i < n / senders.length; i++) {
          // Deadlines already passed, within the current tick, and spread over ~0.3 s.
          long deadline = System.nanoTime() + r.nextLong(-5 * MS, 300 * MS);
          DeadlineTimer.shared().schedule(() -> {
            if (System.nanoTime() - deadline < 0) {
              early.incrementAndGet();
            }
            runs.incrementAndGet();
            threads.add(Thread.currentThread().getName());
            done.countDown();
          }, deadline);
        }
      });
      senders[s].start();
    }
    for (Thread t : senders) {
      t.join();
    }
    assertThat(done.await(30, TimeUnit.SECONDS)).as("every task ran").isTrue();
    assertThat(early.get()).as("tasks that ran before their deadline").isZero();
    assertThat(runs.get()).isEqualTo(n);
    assertThat(threads).isNotEmpty().noneMatch("sluice-deadline"::equals);
  }

  @Test void aCancelledTaskNeverRuns() throws Exception {
    AtomicInteger cancelledRuns = new AtomicInteger();
    CountDownLatch witness = new CountDownLatch(1);
    long deadline = System.nanoTime() + 20 * MS;
    for (int i = 0; i < 1_000; i++) {
      DeadlineTimer.shared().schedule(cancelledRuns::incrementAndGet, deadline).cancel();
    }
    DeadlineTimer.shared().schedule(witness::countDown, deadline + MS);
    assertThat(witness.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(cancelledRuns.get()).isZero();
  }

  @Test void aDeadlineBeyondOneRotationWaitsForItsRound() throws Exception {
    // 1,024 ticks make a rotation: a deadline 1.1 s ahead shares a bucket with one 0.076 s ahead.
    long now = System.nanoTime();
    long far = now + 1_100 * MS;
    long near = now + 76 * MS;
    AtomicLong farRanAt = new AtomicLong();
    CountDownLatch both = new CountDownLatch(2);
    DeadlineTimer.shared().schedule(() -> {
      farRanAt.set(System.nanoTime());
      both.countDown();
    }, far);
    DeadlineTimer.shared().schedule(both::countDown, near);
    assertThat(both.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(farRanAt.get() - far).as("the far task ran at or after its own deadline").isGreaterThanOrEqualTo(0);
  }

  @Test void aTaskThatThrowsDoesNotStopTheOthersOfItsBatch() throws Exception {
    CountDownLatch others = new CountDownLatch(10);
    long deadline = System.nanoTime() + 5 * MS;
    for (int i = 0; i < 10; i++) {
      DeadlineTimer.shared().schedule(() -> {
        throw new IllegalStateException("a task's own bug (expected in this test's log)");
      }, deadline);
      DeadlineTimer.shared().schedule(others::countDown, deadline);
    }
    assertThat(others.await(30, TimeUnit.SECONDS)).isTrue();
  }
}

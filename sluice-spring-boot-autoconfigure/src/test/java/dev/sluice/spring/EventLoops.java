package dev.sluice.spring;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import reactor.blockhound.BlockHound;

/**
 * BlockHound, installed once per test JVM, recording (not throwing) every blocking call made on an
 * event-loop thread: Reactor Netty's server loops and Lettuce's I/O loops, where a Redis decision
 * completes.
 */
final class EventLoops {
  static final List<String> BLOCKED = new CopyOnWriteArrayList<>();
  private static boolean installed;

  private EventLoops() {}

  static synchronized void watch() {
    if (installed) {
      return;
    }
    installed = true;
    BlockHound.builder()
        .nonBlockingThreadPredicate(p -> p.or(t -> t.getName().startsWith("reactor-http-")
            || (t.getName().startsWith("lettuce-") && t.getName().contains("EventLoop"))))
        // Two allowances, both short in-memory locks found by this test, neither I/O, both reported:
        // the core's async pipeline arms (and on completion cancels) a deadline timer on a
        // ScheduledThreadPoolExecutor, whose queue lock is held for a heap insert or removal; and
        // Lettuce guards a connection's writers with a lock (SharedLock) that event loops writing
        // to one shared connection at once contend for. A thread contending for either parks briefly.
        .allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "offer")
        .allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "remove")
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters")
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters")
        .blockingMethodCallback(m -> BLOCKED.add(m + " on " + Thread.currentThread().getName() + " at "
            + Arrays.stream(new Throwable().getStackTrace()).skip(2).limit(30).map(String::valueOf)
                .collect(Collectors.joining(" < "))))
        .install();
  }
}

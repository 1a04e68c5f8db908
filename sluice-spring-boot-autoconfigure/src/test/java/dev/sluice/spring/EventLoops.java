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
        // The one allowance: the core's async pipeline arms (and on completion cancels) a deadline
        // timer on a ScheduledThreadPoolExecutor, whose queue is guarded by a lock held for a heap
        // insert or removal; a thread contending for it parks for that long. Not I/O; reported.
        .allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "offer")
        .allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "remove")
        .blockingMethodCallback(m -> BLOCKED.add(m + " on " + Thread.currentThread().getName() + " at "
            + Arrays.stream(new Throwable().getStackTrace()).skip(2).limit(30).map(String::valueOf)
                .collect(Collectors.joining(" < "))))
        .install();
  }
}

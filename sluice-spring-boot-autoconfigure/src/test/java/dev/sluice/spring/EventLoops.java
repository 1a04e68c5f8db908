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
        // Two allowances, short in-memory locks found by these tests, not I/O: Lettuce guards a
        // connection's writers with a lock (SharedLock) that event loops writing to one shared
        // connection at once contend for, and a contending thread parks briefly. (The core's async
        // deadlines take no lock since the timer wheel of issue 18.)
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters")
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters")
        // And Reactor's own: handing work to boundedElastic (a refund or settlement after the
        // response) checks its executor's queue under that queue's in-memory lock, and a loop that
        // meets another thread holding it parks briefly (seen once in CI, in the Mono cost test).
        .allowBlockingCallsInside("reactor.core.scheduler.BoundedElasticScheduler$BoundedScheduledExecutorService",
            "ensureQueueCapacity")
        .blockingMethodCallback(m -> BLOCKED.add(m + " on " + Thread.currentThread().getName() + " at "
            + Arrays.stream(new Throwable().getStackTrace()).skip(2).limit(30).map(String::valueOf)
                .collect(Collectors.joining(" < "))))
        .install();
  }
}

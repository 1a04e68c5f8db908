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
        // One allowance, a short in-memory lock found by this test, not I/O: Lettuce guards a
        // connection's writers with a lock (SharedLock) that event loops writing to one shared
        // connection at once contend for, and a contending thread parks briefly. (The core's async
        // deadlines take no lock since the timer wheel of issue 18.)
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters")
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters")
        .blockingMethodCallback(m -> BLOCKED.add(m + " on " + Thread.currentThread().getName() + " at "
            + Arrays.stream(new Throwable().getStackTrace()).skip(2).limit(30).map(String::valueOf)
                .collect(Collectors.joining(" < "))))
        .install();
  }
}

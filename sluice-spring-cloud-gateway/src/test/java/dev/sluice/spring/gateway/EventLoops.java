package dev.sluice.spring.gateway;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import reactor.blockhound.BlockHound;

/**
 * BlockHound, installed once per test JVM, recording (not throwing) every blocking call made on an
 * event-loop thread: Reactor Netty's loops (the gateway's server and its client to the downstream)
 * and Lettuce's, where a Redis decision completes. The allowances are the starter's (its EventLoops):
 * short in-memory locks of Lettuce and of Reactor's bounded-elastic queue, not I/O.
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
    BlockHound.Builder b = BlockHound.builder();
    // The allowances the libraries on the class path declare themselves (what BlockHound.install() loads):
    // Spring's, for its annotation caches (ConcurrentReferenceHashMap's segment lock), which the gateway
    // meets ordering a route's filters on its first requests; Reactor's and Netty's.
    java.util.ServiceLoader.load(reactor.blockhound.integration.BlockHoundIntegration.class).forEach(b::with);
    b
        .nonBlockingThreadPredicate(p -> p.or(t -> t.getName().startsWith("reactor-http-")
            || (t.getName().startsWith("lettuce-") && t.getName().contains("EventLoop"))))
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "incrementWriters")
        .allowBlockingCallsInside("io.lettuce.core.protocol.SharedLock", "decrementWriters")
        .allowBlockingCallsInside("reactor.core.scheduler.BoundedElasticScheduler$BoundedScheduledExecutorService",
            "ensureQueueCapacity")
        // Two of this module's own. The memory limiter's per-entry lock, held for a few instructions:
        // a loop that meets another holding it spins (Thread.onSpinWait), then yields; the 16 clients
        // sharing one key find it held. Not I/O, and no wait on another request.
        .allowBlockingCallsInside("dev.sluice.memory.EntryLock", "lock")
        // The gateway's HTTP client to the downstream reads /etc/hosts and /etc/resolv.conf once, when
        // Reactor Netty's default resolver is first built on the first routed request: Netty's, not Sluice's.
        .allowBlockingCallsInside("io.netty.resolver.HostsFileEntriesProvider$ParserImpl", "parse")
        .allowBlockingCallsInside("io.netty.resolver.dns.UnixResolverDnsServerAddressStreamProvider", "parse")
        .allowBlockingCallsInside("io.netty.resolver.dns.UnixResolverDnsServerAddressStreamProvider", "parseEtcResolverSearchDomains")
        .allowBlockingCallsInside("io.netty.resolver.dns.UnixResolverDnsServerAddressStreamProvider", "parseEtcResolverOptions")
        .blockingMethodCallback(m -> {
          StackTraceElement[] stack = new Throwable().getStackTrace();
          // An idle pool worker waiting for its next task (Reactor's parallel scheduler, started by an
          // earlier test before BlockHound was installed, so inside its queue's take() before the
          // integration's allowance could mark it): it serves no request and holds up no event loop.
          if (Arrays.stream(stack).anyMatch(f -> f.getClassName().equals("java.util.concurrent.ThreadPoolExecutor")
              && f.getMethodName().equals("getTask"))) {
            return;
          }
          BLOCKED.add(m + " on " + Thread.currentThread().getName() + " at "
              + Arrays.stream(stack).skip(2).limit(30).map(String::valueOf).collect(Collectors.joining(" < ")));
        })
        .install();
  }
}

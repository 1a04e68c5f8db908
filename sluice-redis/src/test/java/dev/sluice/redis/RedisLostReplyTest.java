package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.tck.FaultProxy;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, finding 2, the acquire's half: when a script's reply was lost and the connection dropped,
 * Lettuce (at least once, its default) sent the same {@code EVALSHA} again once it reconnected, and
 * the acquire was charged twice (2 to 4 to 6 to 8 in the report). The fault kit's {@link FaultProxy}
 * in front of a private redis-server (port 7181) lets the script run, discards its reply and closes the
 * connection; the limiter now fails what it sent on a connection as that connection drops, so
 * Lettuce sends nothing twice: the decision is {@code STORE_UNAVAILABLE} (the script may have run)
 * and the budget is charged at most once.
 */
class RedisLostReplyTest {
  private RedisServerProcess server;
  private FaultProxy proxy;
  private RedisClient client;
  private RedisRateLimiter limiter;
  private RedisRateLimiter direct;
  private Policy policy;

  @BeforeEach void start() throws Exception {
    server = RedisServerProcess.start(7181);
    proxy = FaultProxy.toLoopback(7181);
    RedisURI uri = RedisURI.create("redis://127.0.0.1:" + proxy.port());
    uri.setTimeout(Duration.ofSeconds(5));
    client = RedisClient.create(uri);
    policy = Policy.fixedWindow("lost-" + UUID.randomUUID().toString().substring(0, 8), 10, Duration.ofMinutes(10));
    // A deadline long enough for Lettuce to reconnect and send again before it passes: the replay
    // happens while the caller still waits, the case no cancellation at the deadline prevents.
    limiter = RedisRateLimiter.builder(policy, client).timeout(Duration.ofSeconds(3)).build();
    direct = RedisRateLimiter.builder(policy, RedisClient.create(server.uri())).build();
  }

  @AfterEach void stop() throws Exception {
    if (limiter != null) {
      limiter.close();
    }
    if (direct != null) {
      direct.close();
    }
    if (client != null) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    if (proxy != null) {
      proxy.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void anAcquireWhoseReplyWasLostWasSentAgainOnReconnectAndChargedTwice() throws Exception {
    assertThat(limiter.tryAcquire("k", 2).allowed()).isTrue();
    assertThat(direct.peek("k").remaining()).isEqualTo(8);

    proxy.dropNextReply();
    Decision lost = limiter.tryAcquire("k", 2);
    assertThat(lost.allowed()).as("the reply never came: %s", lost).isFalse();
    assertThat(lost.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(direct.peek("k").remaining()).as("charged once by the script that ran, never again").isEqualTo(6);

    // The connection is back (the limiter's or Lettuce's), and a retry is one more charge.
    Decision retry = awaitStoreDecision(() -> limiter.tryAcquire("k", 2));
    assertThat(retry.allowed()).isTrue();
    assertThat(direct.peek("k").remaining()).isEqualTo(4);
    assertThat(((LettuceTransport) limiter.backend.transport).link.unanswered()).isZero();
  }

  @Test
  void anAsyncAcquireWhoseReplyWasLostWasSentAgainOnReconnectAndChargedTwice() throws Exception {
    assertThat(limiter.tryAcquireAsync("k", 2).toCompletableFuture().join().allowed()).isTrue();
    proxy.dropNextReply();
    Decision lost = limiter.tryAcquireAsync("k", 2).toCompletableFuture().join();
    assertThat(lost.allowed()).as("the reply never came: %s", lost).isFalse();
    assertThat(lost.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    assertThat(direct.peek("k").remaining()).as("charged once by the script that ran, never again").isEqualTo(6);
    Decision retry = awaitStoreDecision(() -> limiter.tryAcquireAsync("k", 2).toCompletableFuture().join());
    assertThat(retry.allowed()).isTrue();
    assertThat(direct.peek("k").remaining()).isEqualTo(4);
  }

  /**
   * The same on a hot key: 16 threads, their acquires coalesced into batches, while five batch
   * replies are lost one after another. Each permit charged is one the limiter allowed, or one of a
   * decision it failed because its reply was lost; a batch sent again would charge permits for
   * decisions counted neither way.
   */
  @Test
  void aHotKeysBatchWhoseReplyWasLostWasSentAgainAndChargedTwice() throws Exception {
    Policy hot = Policy.fixedWindow(policy.name() + "-hot", 100_000, Duration.ofMinutes(10));
    java.util.concurrent.atomic.AtomicLong allowed = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicLong failed = new java.util.concurrent.atomic.AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> threads = new java.util.ArrayList<>();
    for (int i = 0; i < 16; i++) {
      Thread t = new Thread(() -> {
        while (!stop.get()) {
          Decision d = limiter.tryAcquire("hot", 1, hot);
          if (d.allowed()) {
            allowed.incrementAndGet();
          } else {
            assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
            failed.incrementAndGet();
          }
        }
      });
      t.start();
      threads.add(t);
    }
    try {
      for (int round = 0; round < 5; round++) {
        long before = allowed.get();
        awaitTrue(() -> allowed.get() > before + 50); // the connection is back and deciding
        proxy.dropNextReply();
        awaitTrue(() -> !proxy.dropPending());
      }
      long before = allowed.get();
      awaitTrue(() -> allowed.get() > before + 50);
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join(10_000);
      }
    }
    long charged = 100_000 - direct.peek("hot", hot).remaining();
    assertThat(charged).as("permits charged; %s allowed, %s failed", allowed.get(), failed.get())
        .isBetween(allowed.get(), allowed.get() + failed.get());
    assertThat(failed.get()).as("decisions whose reply was lost").isPositive();
  }

  private static void awaitTrue(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("condition within 10 s").isLessThan(deadline);
      Thread.sleep(5); // poll
    }
  }

  /** The first decision made on Redis (not by the failure mode) within 5 s. */
  private static Decision awaitStoreDecision(java.util.function.Supplier<Decision> call) throws InterruptedException {
    long deadline = System.nanoTime() + 5_000_000_000L;
    Decision d = call.get();
    while (d.reason() == Reason.STORE_UNAVAILABLE && System.nanoTime() < deadline) {
      Thread.sleep(10); // poll until the connection is back
      d = call.get();
    }
    return d;
  }
}

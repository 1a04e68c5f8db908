package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.redis.internal.RedisPlan;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import dev.sluice.internal.ModelSteps;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, findings 2 and 3, on Redis: a ticket changes its budget at most once whatever the
 * timing. Before, a refund or settle sent to a Redis frozen past the 100 ms timeout was answered
 * FAILED although the script ran when Redis came back, and a retry (the service rebuilds the ticket
 * per request) applied it again (refund 200 to 100 to 0); a refund script run twice (Lettuce re-sends
 * a buffered EVALSHA after a reconnect) gave the permits back twice (5 to 3 to 1). Now the refund and
 * overrun scripts record the ticket's id as spent (a key beside the budget's, one hash slot) in the
 * same script that applies it. A private redis-server (port 7177), never the shared one.
 */
class RedisTicketsOnceTest {
  private static final Duration TIMEOUT = Duration.ofMillis(100);

  private RedisServerProcess server;
  private RedisClient client;
  private RedisRateLimiter limiter;
  private Ticket.Issuer issuer;
  private Policy policy;

  @BeforeEach void start() throws Exception {
    server = RedisServerProcess.start(7177);
    RedisURI uri = RedisURI.create(server.uri());
    uri.setTimeout(Duration.ofSeconds(2));
    client = RedisClient.create(uri);
    issuer = new Ticket.Issuer();
    policy = Policy.fixedWindow("once-" + UUID.randomUUID().toString().substring(0, 8), 500, Duration.ofMinutes(10));
    limiter = RedisRateLimiter.builder(policy, client).timeout(TIMEOUT).issuer(issuer).build();
  }

  @AfterEach void stop() throws Exception {
    if (server != null) {
      server.thaw();
    }
    if (limiter != null) {
      limiter.close();
    }
    if (client != null) {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    if (server != null) {
      server.close();
    }
  }

  /** The same ticket as another process (or the service, per request) would rebuild it. */
  private Ticket rebuilt(Ticket t) {
    return issuer.restore(t.policy(), t.key(), t.permits(), t.stamp(), t.id());
  }

  @Test
  void aRefundAnsweredFailedUnderAFrozenRedisWasAppliedAndItsRetryAppliedItAgain() throws Exception {
    Ticket t = limiter.tryAcquire("k", 200).ticket().orElseThrow();
    limiter.tryAcquire("k", 100);
    assertThat(limiter.peek("k").remaining()).isEqualTo(200);

    server.freeze();
    Refund first;
    try {
      first = limiter.refund(t);
    } finally {
      server.thaw();
    }
    assertThat(first).as("sent, no answer within %s", TIMEOUT).isEqualTo(Refund.UNKNOWN);
    awaitRemaining(() -> limiter.peek("k").remaining(), 400); // the script ran once Redis was back

    assertThat(limiter.refund(t)).as("retry of the same ticket").isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.refund(rebuilt(t))).as("retry of the ticket rebuilt from its parts").isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.peek("k").remaining()).as("the budget changed exactly once").isEqualTo(400);
  }

  @Test
  void aSettleAnsweredFailedUnderAFrozenRedisWasAppliedAndItsRetryAppliedItAgain() throws Exception {
    Ticket under = limiter.tryAcquire("k", 100).ticket().orElseThrow();
    Ticket over = limiter.tryAcquire("k", 100).ticket().orElseThrow();
    assertThat(limiter.peek("k").remaining()).isEqualTo(300);

    server.freeze();
    Settlement s1;
    Settlement s2;
    try {
      s1 = limiter.settle(under, 10);  // 90 back
      s2 = limiter.settle(over, 250);  // 150 more
    } finally {
      server.thaw();
    }
    assertThat(s1).isEqualTo(Settlement.UNKNOWN);
    assertThat(s2).isEqualTo(Settlement.UNKNOWN);
    awaitRemaining(() -> limiter.peek("k").remaining(), 300 + 90 - 150);

    for (int retry = 0; retry < 2; retry++) {
      assertThat(limiter.settle(rebuilt(under), 10)).isEqualTo(Settlement.NO_EFFECT);
      assertThat(limiter.settle(rebuilt(over), 250)).isEqualTo(Settlement.NO_EFFECT);
      assertThat(limiter.refund(rebuilt(under))).isEqualTo(Refund.NO_EFFECT);
    }
    assertThat(limiter.peek("k").remaining()).as("each settled exactly once").isEqualTo(240);
  }

  /**
   * A refund's script run twice with the same arguments, as when a reply is lost and the client
   * sends the buffered EVALSHA again: the second run changes nothing, on Redis's clock and on a
   * supplied one.
   */
  @Test
  void aRefundScriptRunTwiceGaveThePermitsBackTwice() {
    Ticket t = limiter.tryAcquire("k", 2).ticket().orElseThrow();
    limiter.tryAcquire("k", 3);
    assertThat(limiter.peek("k").remaining()).isEqualTo(495);
    RedisPlan plan = RedisPlan.of(policy);
    String stored = RedisRateLimiter.storedKey(policy, "k");
    String[] keys = {stored, RedisRateLimiter.spentKey(stored, t)};
    String[] argv = plan.argv("r", "", 2, t.stamp(), "0", ModelSteps.ticketExpiresAt(t));
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      RedisCommands<String, String> redis = c.sync();
      List<Object> once = redis.eval(plan.script.body, ScriptOutputType.MULTI, keys, argv);
      List<Object> twice = redis.eval(plan.script.body, ScriptOutputType.MULTI, keys, argv);
      assertThat(once.get(6)).as("wrote, first run").isEqualTo(1L);
      assertThat(twice.get(6)).as("wrote, second run").isEqualTo(0L);
      assertThat(redis.pttl(keys[1])).as("the spent key lives as long as the ticket").isPositive()
          .isLessThanOrEqualTo((ModelSteps.ticketExpiresAt(t) - t.stamp()) / 1000 + 1);
    }
    assertThat(limiter.peek("k").remaining()).as("given back once").isEqualTo(497);
    assertThat(limiter.refund(t)).isEqualTo(Refund.NO_EFFECT);
  }

  private static void awaitRemaining(LongSupplier remaining, long expected) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    long seen = remaining.getAsLong();
    while (seen != expected && System.nanoTime() < deadline) {
      Thread.sleep(10);
      seen = remaining.getAsLong();
    }
    assertThat(seen).isEqualTo(expected);
  }
}

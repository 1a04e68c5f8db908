package dev.sluice.redis.redisson;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.redis.RedisClusterNodes;
import dev.sluice.redis.RedisOutage;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.redisson.api.RedissonClient;

/**
 * The conformance kit on Redisson against a three-master Redis Cluster this test starts on ports
 * 7411-7413 and tears down after.
 */
class RedissonClusterConformanceTest extends RateLimiterContract {
  static final int[] PORTS = {7411, 7412, 7413};
  private static final List<RedisServerProcess> NODES = new ArrayList<>();
  private static RedissonClient redisson;
  private static RedissonTransport transport;

  @BeforeAll static void startCluster() throws Exception {
    NODES.addAll(RedisClusterNodes.start(PORTS));
    redisson = RedissonClients.cluster(PORTS[0]);
    transport = RedissonTransport.of(redisson);
  }

  @AfterAll static void stopCluster() throws Exception {
    if (transport != null) {
      transport.close();
      redisson.shutdown();
    }
    for (RedisServerProcess n : NODES) {
      n.close();
    }
    NODES.clear();
  }

  private static RedisRateLimiter.Builder builder(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, transport).ticker(ticker).timeout(Duration.ofSeconds(10)) // decisions, not latency
        .expiryGrace(RedissonConformanceTest.KIT_GRACE);
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return builder(policy, ticker).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(builder(policy, ticker).issuer(issuer).build());
  }

  @Override protected RateLimiter newLimiterWithShortExpiry(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, transport).ticker(ticker).timeout(RedissonConformanceTest.SHORT_EXPIRY_TIMEOUT)
        .expiryGrace(RedissonConformanceTest.SHORT_EXPIRY_GRACE).build();
  }

  @Override protected Duration shortExpiryOutlives() {
    return RedissonConformanceTest.SHORT_EXPIRY_GRACE.plus(RedissonConformanceTest.SHORT_EXPIRY_TIMEOUT);
  }

  /** An outage of the whole cluster: every master frozen (SIGSTOP) and thawed together, inside the node timeout. */
  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) {
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, transport).ticker(ticker).timeout(Duration.ofMillis(200))
        .expiryGrace(RedissonConformanceTest.KIT_GRACE).failureMode(mode).build();
    return Optional.of(new RedisOutage(limiter, NODES, () -> { }));
  }
}

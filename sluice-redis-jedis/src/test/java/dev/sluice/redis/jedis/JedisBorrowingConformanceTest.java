package dev.sluice.redis.jedis;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.redis.RedisOutage;
import dev.sluice.redis.RedisRateLimiter;
import dev.sluice.redis.RedisServerProcess;
import dev.sluice.redis.SharedRedis;
import dev.sluice.tck.RateLimiterContract;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPoolConfig;

/**
 * The conformance kit on {@link JedisTransport#borrowing}: a {@link redis.clients.jedis.Jedis} borrowed
 * from a {@link JedisPool} per command, as Spring Data Redis's {@code JedisConnectionFactory} lends
 * them, against the shared standalone Redis.
 */
class JedisBorrowingConformanceTest extends RateLimiterContract {
  /** The private server the outage cases freeze (SIGSTOP) and thaw; never the shared one. */
  private static final int OUTAGE_PORT = 7342;
  private static JedisPool pool;
  private static JedisTransport transport;

  static JedisPool pool(String uri) {
    URI u = URI.create(uri);
    return new JedisPool(new JedisPoolConfig(), u.getHost(), u.getPort(), JedisClients.SOCKET_TIMEOUT_MILLIS);
  }

  private static synchronized JedisTransport transport() {
    if (transport == null) {
      SharedRedis.client(); // skipped loudly (failed under CI) when the shared server is unreachable
      pool = pool(SharedRedis.URL);
      transport = JedisTransport.borrowing(pool::getResource, JedisTransport.DEFAULT_THREADS);
    }
    return transport;
  }

  @AfterAll static void close() {
    if (transport != null) {
      transport.close();
      pool.close();
    }
  }

  private static RedisRateLimiter.Builder builder(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, transport()).ticker(ticker).timeout(Duration.ofSeconds(10))
        .expiryGrace(JedisConformanceTest.KIT_GRACE);
  }

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    return builder(policy, ticker).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(builder(policy, ticker).issuer(issuer).build());
  }

  @Override protected Optional<RateLimiter> newLimiterWithListener(Policy policy, Ticker ticker, RateLimitListener listener) {
    return Optional.of(builder(policy, ticker).listener(listener, true).build());
  }

  @Override protected RateLimiter newLimiterWithShortExpiry(Policy policy, Ticker ticker) {
    return RedisRateLimiter.builder(policy, transport()).ticker(ticker).timeout(JedisConformanceTest.SHORT_EXPIRY_TIMEOUT)
        .expiryGrace(JedisConformanceTest.SHORT_EXPIRY_GRACE).build();
  }

  @Override protected Duration shortExpiryOutlives() {
    return JedisConformanceTest.SHORT_EXPIRY_GRACE.plus(JedisConformanceTest.SHORT_EXPIRY_TIMEOUT);
  }

  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    RedisServerProcess server = RedisServerProcess.start(OUTAGE_PORT);
    JedisPool p = pool(server.uri());
    JedisTransport t = JedisTransport.borrowing(p::getResource, JedisTransport.DEFAULT_THREADS);
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, t).ticker(ticker).timeout(Duration.ofMillis(200))
        .expiryGrace(JedisConformanceTest.KIT_GRACE).failureMode(mode).build();
    return Optional.of(new RedisOutage(limiter, List.of(server), () -> {
      t.close();
      p.close();
      server.close();
    }));
  }
}

package dev.sluice.redis;

import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.tck.RateLimiterContract;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** The whole conformance kit against the shared standalone Redis, on the kit's ticker. */
class RedisConformanceTest extends RateLimiterContract {
  /** The private server the outage cases freeze (SIGSTOP) and thaw; never the shared one. */
  private static final int OUTAGE_PORT = 7140;

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline: the kit asserts decisions, and a loaded machine must not turn them into timeouts.
    return RedisRateLimiter.builder(policy, SharedRedis.client()).ticker(ticker)
        .timeout(Duration.ofSeconds(10)).build();
  }

  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    RedisServerProcess server = RedisServerProcess.start(OUTAGE_PORT);
    RedisClient client = RedisClient.create(server.uri());
    RedisRateLimiter limiter = RedisRateLimiter.builder(policy, client).ticker(ticker)
        .timeout(Duration.ofMillis(200)).failureMode(mode).build();
    return Optional.of(new Outage() {
      @Override public RateLimiter limiter() {
        return limiter;
      }

      @Override public void down() throws Exception {
        server.freeze();
      }

      @Override public void up() throws Exception {
        server.thaw();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (limiter.peek("probe").path() != Path.PRIMARY) {
          if (System.nanoTime() > deadline) {
            throw new AssertionError("Redis on port " + OUTAGE_PORT + " did not answer within 10 s of SIGCONT");
          }
          Thread.onSpinWait();
        }
      }

      @Override public void close() throws Exception {
        limiter.close();
        client.shutdown();
        server.thaw();
        server.close();
      }
    });
  }
}

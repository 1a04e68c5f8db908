package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Policy;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Relaxed durability decides exactly like the default, and the test prints what each costs on this
 * machine (median of one writing decision, sequential, one connection). The JMH benchmarks in
 * sluice-benchmarks are the measurement of record; this is the quick look.
 */
class PostgresDurabilityTest {
  @Test
  void relaxedDurabilityDecidesTheSameAndReportsTheCostOfADurableCommit() throws Exception {
    PostgresTestSupport.requireServer();
    String table = PostgresTestSupport.tableName();
    HikariDataSource ds = PostgresTestSupport.pool(PostgresTestSupport.URL, 1);
    try {
      Policy p = Policy.tokenBucket(PostgresTestSupport.name("durability"), 2, 1, Duration.ofMinutes(1));
      JdbcRateLimiter.builder(p, ds).table(table).build().applySchema();
      try (JdbcRateLimiter durable = JdbcRateLimiter.builder(p, ds).table(table).build();
           JdbcRateLimiter relaxed = JdbcRateLimiter.builder(p, ds).table(table).relaxedDurability(true).build()) {
        assertThat(relaxed.tryAcquire("same").remaining()).isEqualTo(1);
        assertThat(durable.tryAcquire("same").remaining()).isZero();
        assertThat(relaxed.tryAcquire("same").allowed()).isFalse();
        for (int round = 0; round < 2; round++) { // the first round warms up
          long d = medianMicros(durable, "d" + round);
          long r = medianMicros(relaxed, "r" + round);
          long refused = medianRefusalMicros(durable);
          if (round == 1) {
            System.err.printf("[durability] median decision: durable write %d us, synchronous_commit=off write %d us,"
                + " refusal (writes nothing) %d us%n", d, r, refused);
          }
        }
      }
    } finally {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
      ds.close();
    }
  }

  private static long medianRefusalMicros(JdbcRateLimiter l) {
    long[] t = new long[200];
    for (int i = 0; i < t.length; i++) {
      long t0 = System.nanoTime();
      Decision d = l.tryAcquire("same");
      t[i] = (System.nanoTime() - t0) / 1_000;
      assertThat(d.allowed()).isFalse();
    }
    Arrays.sort(t);
    return t[t.length / 2];
  }

  private static long medianMicros(JdbcRateLimiter l, String prefix) {
    long[] t = new long[200];
    for (int i = 0; i < t.length; i++) {
      long t0 = System.nanoTime();
      Decision d = l.tryAcquire(prefix + "-" + i); // a fresh key: always a write
      t[i] = (System.nanoTime() - t0) / 1_000;
      assertThat(d.allowed()).isTrue();
    }
    Arrays.sort(t);
    return t[t.length / 2];
  }
}

package dev.sluice.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Benchmarks never run in the build; this only checks that every benchmark's state sets up and each
 * method answers as its load says, so a broken benchmark is caught before anyone runs the script.
 */
class BenchmarkStatesTest {

  @Test
  void singleKeyAllowedPassesEveryLimiter() {
    SingleKeyBenchmark b = new SingleKeyBenchmark();
    b.load = Limiters.Load.ALLOWED;
    b.setUp();
    assertThat(b.sluice()).isTrue();
    assertThat(b.sluiceDecision().allowed()).isTrue();
    assertThat(b.bucket4jLockFree()).isTrue();
    assertThat(b.bucket4jSynchronized()).isTrue();
    assertThat(b.resilience4j()).isTrue();
    assertThat(b.guava()).isTrue();
  }

  @Test
  void singleKeyRefusedRefusesEveryLimiter() {
    SingleKeyBenchmark b = new SingleKeyBenchmark();
    b.load = Limiters.Load.REFUSED;
    b.setUp();
    assertThat(b.sluice()).isFalse();
    assertThat(b.sluiceDecision().allowed()).isFalse();
    assertThat(b.bucket4jLockFree()).isFalse();
    assertThat(b.bucket4jSynchronized()).isFalse();
    assertThat(b.resilience4j()).isFalse();
    assertThat(b.guava()).isFalse();
  }

  @Test
  void keyedTracksEveryKeyInBoth() {
    KeyedBenchmark b = new KeyedBenchmark();
    b.keys = 1_000;
    b.setUp();
    assertThat(b.sluice.trackedKeys()).isEqualTo(1_000);
    assertThat(b.caffeineOfBuckets.estimatedSize()).isEqualTo(1_000);
    for (int i = 0; i < 100; i++) {
      assertThat(b.sluice()).isTrue();
      assertThat(b.caffeineOfBucket4j()).isTrue();
    }
    assertThat(b.sluice.trackedKeys()).isEqualTo(1_000);
  }

  @Test
  void heapPerKeyMeasuresSomethingPositive() {
    double[] r = HeapPerKey.measure(2_000, () -> Limiters.sluice(Limiters.Load.KEYED, 2_000), HeapPerKey::fillSluice);
    assertThat(r[1]).as("JOL bytes per key").isGreaterThan(50);
  }

  @Test
  void redisStateSetsUpAndEveryMethodDecides() throws Exception {
    requireServer(RedisFixture.reachable(), "Redis at " + RedisFixture.URL);
    RedisBenchmark b = new RedisBenchmark();
    b.keys = 10;
    b.maxBatch = 1; // one EVALSHA per decision, so the count below is exact (coalescing would share them)
    b.setUp();
    try {
      assertThat(b.sluice()).isTrue();
      assertThat(b.bucket4j()).isTrue();
      assertThat(b.evalshaCeiling()).isEqualTo(1L);
      assertThat(b.sluiceAsync()).isEqualTo(RedisBenchmark.IN_FLIGHT);
      assertThat(b.evalshaAsyncCeiling()).isEqualTo(RedisBenchmark.IN_FLIGHT);
      // The limiter loads its scripts when it connects (so a burst keeps its order: one per algorithm
      // and the overrides' own); then one command per decision.
      int scripts = dev.sluice.redis.internal.RedisScript.values().length;
      assertThat(b.fx.sluiceCommands.sum()).as("Sluice commands: %d script loads + setup check + 1 + in flight", scripts)
          .isEqualTo(scripts + 2 + RedisBenchmark.IN_FLIGHT);
    } finally {
      b.tearDown();
    }
  }

  @Test
  void postgresStateSetsUpEveryMethodDecidesAndTablesAreDropped() throws Exception {
    requireServer(PostgresFixture.reachable(), "PostgreSQL at " + PostgresFixture.URL);
    PostgresBenchmark b = new PostgresBenchmark();
    b.keys = 10;
    b.setUp();
    String sluiceTable = b.fx.sluiceTable;
    String bucket4jTable = b.fx.bucket4jTable;
    String unloggedTable = b.fx.unloggedTable;
    String floorTable = b.fx.floorTable;
    try {
      long before = b.fx.sluiceCount.roundTrips();
      assertThat(b.sluiceDurable()).isTrue();
      assertThat(b.fx.sluiceCount.roundTrips() - before).as("one statement per Sluice decision").isEqualTo(1);
      assertThat(b.sluiceRelaxed()).isTrue();
      assertThat(b.sluiceUnlogged()).isTrue();
      PostgresProfileBenchmark profile = new PostgresProfileBenchmark();
      profile.fx = b.fx;
      profile.keys = b.keys;
      assertThat(profile.sluiceRelaxedInline()).isTrue();
      assertThat(profile.floorUpdateDurable()).isTrue();
      assertThat(profile.floorUpdateRelaxed()).isTrue();
      assertThat(b.bucket4jSelectForUpdate()).isTrue();
      assertThat(b.bucket4jAdvisoryLock()).isTrue();
      assertThat(b.fx.sfuCount.roundTrips()).as("Bucket4j select-for-update on a new row").isGreaterThan(1);
    } finally {
      b.tearDown();
    }
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(PostgresFixture.URL);
         java.sql.ResultSet rs = c.createStatement().executeQuery(
             "select count(*) from pg_tables where tablename in ('" + sluiceTable + "', '" + bucket4jTable + "', '" + unloggedTable
                 + "', '" + floorTable + "')")) {
      rs.next();
      assertThat(rs.getInt(1)).as("the fixture drops the tables it created").isZero();
    }
  }

  /** Skips with a loud notice when the server is absent, except under CI=true where it fails. */
  static void requireServer(boolean reachable, String what) {
    if (!reachable) {
      String msg = what + " is not reachable: benchmark state test skipped";
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(msg + " (CI=true)");
      }
      System.err.println("*** " + msg);
      Assumptions.abort(msg);
    }
  }
}

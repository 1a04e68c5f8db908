package dev.sluice.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import dev.sluice.jdbc.JdbcRateLimiter;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.postgresql.Bucket4jPostgreSQL;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;

/**
 * Sluice's {@link JdbcRateLimiter} (durable and relaxed-durability) and Bucket4j's select-for-update
 * and advisory-lock PostgreSQL proxy managers, each over its own pool of 16 connections wrapped in a
 * {@link CountingDataSource}, each on its own table created here ({@code sluice_bench_<run>},
 * {@code b4j_bench_<run>}) and dropped by {@link #close()}. Every check is allowed
 * ({@link Limiters.Load#ALLOWED}), so every check writes.
 */
final class PostgresFixture implements AutoCloseable {
  static final String URL = System.getenv().getOrDefault("SLUICE_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
  static final int POOL = 16;

  final String run = UUID.randomUUID().toString().substring(0, 8).replace('-', '_');
  final String sluiceTable = "sluice_bench_" + run;
  final String bucket4jTable = "b4j_bench_" + run;
  final String[] keys;
  final HikariDataSource sluicePool = pool("sluice");
  final HikariDataSource sluiceRelaxedPool = pool("sluice-relaxed");
  final HikariDataSource sfuPool = pool("b4j-sfu");
  final HikariDataSource advisoryPool = pool("b4j-advisory");
  final CountingDataSource sluiceCount = new CountingDataSource(sluicePool);
  final CountingDataSource sluiceRelaxedCount = new CountingDataSource(sluiceRelaxedPool);
  final CountingDataSource sfuCount = new CountingDataSource(sfuPool);
  final CountingDataSource advisoryCount = new CountingDataSource(advisoryPool);
  final JdbcRateLimiter sluice;
  final JdbcRateLimiter sluiceRelaxed;
  final BucketProxy[] selectForUpdate;
  final BucketProxy[] advisoryLock;

  PostgresFixture(int keyCount) throws SQLException {
    keys = Limiters.keys(keyCount);
    try (Connection c = DriverManager.getConnection(URL); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + bucket4jTable + " (id BIGINT PRIMARY KEY, state BYTEA, expires_at BIGINT)");
    }
    Policy policy = Limiters.sluicePolicy("bench-" + run, Limiters.Load.ALLOWED);
    sluice = JdbcRateLimiter.builder(policy, sluiceCount.dataSource).table(sluiceTable).timeout(Duration.ofSeconds(10)).build();
    sluice.applySchema();
    sluiceRelaxed = JdbcRateLimiter.builder(policy.withName("bench-relaxed-" + run), sluiceRelaxedCount.dataSource)
        .table(sluiceTable).relaxedDurability(true).timeout(Duration.ofSeconds(10)).build();
    BucketConfiguration config = BucketConfiguration.builder()
        .addLimit(l -> l.capacity(Limiters.Load.ALLOWED.capacity).refillGreedy(Limiters.Load.ALLOWED.refill, Limiters.Load.ALLOWED.period))
        .build();
    ProxyManager<Long> sfu = Bucket4jPostgreSQL.selectForUpdateBasedBuilder(sfuCount.dataSource).table(bucket4jTable).build();
    ProxyManager<Long> advisory = Bucket4jPostgreSQL.advisoryLockBasedBuilder(advisoryCount.dataSource).table(bucket4jTable).build();
    selectForUpdate = new BucketProxy[keyCount];
    advisoryLock = new BucketProxy[keyCount];
    for (int i = 0; i < keyCount; i++) {
      // Two id ranges in one table: the two managers never share a row.
      selectForUpdate[i] = sfu.builder().build((long) i, () -> config);
      advisoryLock[i] = advisory.builder().build(1_000_000L + i, () -> config);
    }
  }

  private HikariDataSource pool(String name) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(URL);
    c.setMaximumPoolSize(POOL);
    c.setMinimumIdle(POOL);
    c.setPoolName("bench-" + name);
    return new HikariDataSource(c);
  }

  /** True when the server answers within two seconds. */
  static boolean reachable() {
    DriverManager.setLoginTimeout(2);
    try (Connection c = DriverManager.getConnection(URL)) {
      return c.isValid(2);
    } catch (SQLException e) {
      return false;
    }
  }

  @Override public void close() throws SQLException {
    sluice.close();
    sluiceRelaxed.close();
    sluicePool.close();
    sluiceRelaxedPool.close();
    sfuPool.close();
    advisoryPool.close();
    try (Connection c = DriverManager.getConnection(URL); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + bucket4jTable);
      s.execute("DROP TABLE IF EXISTS " + sluiceTable);
    }
  }
}

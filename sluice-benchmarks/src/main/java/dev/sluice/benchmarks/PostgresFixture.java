package dev.sluice.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import dev.sluice.jdbc.JdbcRateLimiter;
import dev.sluice.spi.StoreRateLimiter;
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
 * {@code b4j_bench_<run>}) and dropped by {@link #close()}; and Sluice on an {@code UNLOGGED} copy of
 * its table ({@code sluice_unlogged_<run>}, no WAL for its rows; a crash of the server empties it),
 * sharing the relaxed limiter's pool (one benchmark runs at a time); a relaxed limiter whose
 * statements run on the calling thread ({@code sluiceRelaxedInline}: no hand-off to the executor, so no
 * deadline either; for measuring the hand-off only); and the floor of a write on one row, a bare
 * {@code UPDATE ... SET n = n + 1} per call in autocommit on {@code sluice_floor_<run>}, durable and
 * relaxed. Every check is allowed
 * ({@link Limiters.Load#ALLOWED}), so every check writes. {@code maxBatch} is Sluice's request
 * coalescing (1 turns it off).
 */
final class PostgresFixture implements AutoCloseable {
  static final String URL = System.getenv().getOrDefault("SLUICE_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
  static final int POOL = 16;

  final String run = UUID.randomUUID().toString().substring(0, 8).replace('-', '_');
  final String sluiceTable = "sluice_bench_" + run;
  final String bucket4jTable = "b4j_bench_" + run;
  final String unloggedTable = "sluice_unlogged_" + run;
  final String floorTable = "sluice_floor_" + run;
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
  final JdbcRateLimiter sluiceUnlogged;
  final JdbcRateLimiter sluiceRelaxedInline;
  final BucketProxy[] selectForUpdate;
  final BucketProxy[] advisoryLock;

  PostgresFixture(int keyCount) throws SQLException {
    this(keyCount, StoreRateLimiter.MAX_BATCH);
  }

  PostgresFixture(int keyCount, int maxBatch) throws SQLException {
    keys = Limiters.keys(keyCount);
    try (Connection c = DriverManager.getConnection(URL); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + bucket4jTable + " (id BIGINT PRIMARY KEY, state BYTEA, expires_at BIGINT)");
      s.execute(JdbcRateLimiter.ddl(unloggedTable, false).replace("CREATE TABLE", "CREATE UNLOGGED TABLE"));
      s.execute("CREATE TABLE " + floorTable + " (id int PRIMARY KEY, n bigint NOT NULL) WITH (fillfactor = 70)");
      s.execute("INSERT INTO " + floorTable + " SELECT i, 0 FROM generate_series(0, " + (keyCount - 1) + ") i");
    }
    Policy policy = Limiters.sluicePolicy("bench-" + run, Limiters.Load.ALLOWED);
    sluice = JdbcRateLimiter.builder(policy, sluiceCount.dataSource).table(sluiceTable).timeout(Duration.ofSeconds(10))
        .maxBatch(maxBatch).build();
    sluice.applySchema();
    sluiceRelaxed = JdbcRateLimiter.builder(policy.withName("bench-relaxed-" + run), sluiceRelaxedCount.dataSource)
        .table(sluiceTable).relaxedDurability(true).timeout(Duration.ofSeconds(10)).maxBatch(maxBatch).build();
    sluiceUnlogged = JdbcRateLimiter.builder(policy.withName("bench-unlogged-" + run), sluiceRelaxedCount.dataSource)
        .table(unloggedTable).timeout(Duration.ofSeconds(10)).maxBatch(maxBatch).build();
    sluiceRelaxedInline = JdbcRateLimiter.builder(policy.withName("bench-inline-" + run), sluiceRelaxedCount.dataSource)
        .table(sluiceTable).relaxedDurability(true).timeout(Duration.ofSeconds(10)).maxBatch(maxBatch)
        .asyncExecutor(Runnable::run).build();
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

  /** One bare increment of row {@code id} in autocommit, on {@code pool}: durable, or relaxed as Sluice's statement sets it. */
  boolean floorUpdate(HikariDataSource pool, int id, boolean relaxed) {
    String sql = relaxed
        ? "WITH c AS (SELECT set_config('synchronous_commit', 'off', true)) UPDATE " + floorTable + " SET n = n + 1 FROM c WHERE id = ?"
        : "UPDATE " + floorTable + " SET n = n + 1 WHERE id = ?";
    try (Connection c = pool.getConnection(); java.sql.PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setInt(1, id);
      return ps.executeUpdate() == 1;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
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
    sluiceUnlogged.close();
    sluiceRelaxedInline.close();
    sluicePool.close();
    sluiceRelaxedPool.close();
    sfuPool.close();
    advisoryPool.close();
    try (Connection c = DriverManager.getConnection(URL); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + bucket4jTable);
      s.execute("DROP TABLE IF EXISTS " + sluiceTable);
      s.execute("DROP TABLE IF EXISTS " + unloggedTable);
      s.execute("DROP TABLE IF EXISTS " + floorTable);
    }
  }
}

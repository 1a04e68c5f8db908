package dev.sluice.jdbc.store;

import org.junit.jupiter.api.Assumptions;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import javax.sql.DataSource;

/**
 * The shared PostgreSQL and MariaDB servers of the tests, one HikariCP pool each, and this module's
 * own tables. A server that cannot be reached skips the tests with a loud notice, except under
 * {@code CI=true}, where it fails them.
 */
final class JdbcVersionedStoreDatabases {
  static final String POSTGRES_URL = env("SLUICE_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
  static final String MARIADB_URL = env("SLUICE_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test?user=root");

  /** The tables these tests create and use (never dropped: records are under random partitions). */
  static final String TCK_TABLE = "sluice_vstore_tck";
  static final String CONTRACT_TABLE = "sluice_vstore_contract";
  static final String TEST_TABLE = "sluice_vstore_test";

  private static final ConcurrentMap<String, HikariDataSource> POOLS = new ConcurrentHashMap<>();

  private JdbcVersionedStoreDatabases() {}

  static DataSource postgres() {
    return pool(POSTGRES_URL, "PostgreSQL");
  }

  static DataSource mariadb() {
    return pool(MARIADB_URL, "MariaDB");
  }

  /** A store over {@code dataSource} in {@code table}, created if absent. */
  static JdbcVersionedStore store(DataSource dataSource, String table) {
    JdbcVersionedStore store = JdbcVersionedStore.builder(dataSource).table(table).build();
    store.createTableIfAbsent();
    return store;
  }

  private static DataSource pool(String url, String name) {
    reachable(url, name);
    return POOLS.computeIfAbsent(url, u -> {
      HikariConfig c = new HikariConfig();
      c.setJdbcUrl(u);
      c.setPoolName("sluice-vstore-" + name);
      // 16 for the kit's 16 threads, plus the contract's extra connection.
      c.setMaximumPoolSize(18);
      c.setMinimumIdle(0);
      c.setConnectionTimeout(10_000);
      HikariDataSource ds = new HikariDataSource(c);
      Runtime.getRuntime().addShutdownHook(new Thread(ds::close));
      return ds;
    });
  }

  private static void reachable(String url, String name) {
    try (Connection c = DriverManager.getConnection(url)) {
      c.isValid(2);
    } catch (SQLException e) {
      String msg = "!!! " + name + " at " + url + " is unreachable (" + e.getMessage() + "); "
          + "JDBC versioned-store tests are SKIPPED. Set CI=true to make this a failure.";
      System.err.println(msg);
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(msg, e);
      }
      Assumptions.abort(msg);
    }
  }

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? fallback : v;
  }
}

package dev.sluice.jdbc;

import dev.sluice.Path;
import dev.sluice.RateLimiter;
import dev.sluice.tck.RateLimiterContract;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * The kit's outage fixture for anything over PostgreSQL: a private server (never the shared one)
 * with a fresh database, a limiter built over it, frozen with SIGSTOP for {@link #down} and thawed
 * for {@link #up}. Shared by the JDBC limiter's and the versioned-store engine's kit runs.
 */
public final class PostgresOutage implements RateLimiterContract.Outage {
  private final PostgresPrivateServer server;
  private final RateLimiter limiter;

  private PostgresOutage(PostgresPrivateServer server, RateLimiter limiter) {
    this.server = server;
    this.limiter = limiter;
  }

  /** Builds the limiter under test over a data source. */
  public interface Build {
    RateLimiter over(DataSource dataSource) throws Exception;
  }

  /** Starts a private server with database {@code sluice} and builds the limiter over a data source of it. */
  public static PostgresOutage start(Build build) throws Exception {
    PostgresPrivateServer server = PostgresPrivateServer.start();
    try {
      try (Connection c = DriverManager.getConnection(server.url("postgres")); Statement s = c.createStatement()) {
        s.execute("CREATE DATABASE sluice");
      }
      return new PostgresOutage(server, build.over(new PostgresUnpooledDataSource(server.url())));
    } catch (Exception | Error e) {
      server.close();
      throw e;
    }
  }

  @Override public RateLimiter limiter() {
    return limiter;
  }

  @Override public void down() throws Exception {
    server.freeze(true);
  }

  @Override public void up() throws Exception {
    server.freeze(false);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (limiter.peek("probe").path() != Path.PRIMARY) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the private PostgreSQL did not answer within 30 s of SIGCONT");
      }
    }
  }

  @Override public void close() throws Exception {
    if (limiter instanceof AutoCloseable c) {
      c.close();
    }
    server.close();
  }
}

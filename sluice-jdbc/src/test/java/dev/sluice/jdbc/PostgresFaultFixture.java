package dev.sluice.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticket;
import dev.sluice.tck.FaultContract;
import dev.sluice.tck.FaultProxy;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The fault kit's fixture for anything over PostgreSQL (the JDBC limiter, plain and in tenant mode,
 * and the versioned-store engine): the kit's proxy in front of a server, a HikariCP pool through it
 * for the limiters under test and one straight to the server for reading budgets. On the shared
 * server the proxy's faults are the only ones (they never touch the server); on a private server
 * ({@link #privateServer}) the kit may also stop, freeze and restart the server itself.
 */
public final class PostgresFaultFixture implements FaultContract.Fixture, AutoCloseable {
  /** Pool size of each side: the kit's cases run at most seven callers at once. */
  private static final int POOL = 8;

  /** Builds the limiter under test over a data source. */
  public interface Build {
    RateLimiter over(DataSource dataSource, FaultContract.Setup setup) throws Exception;
  }

  private final FaultProxy proxy;
  private final HikariDataSource throughProxy;
  private final HikariDataSource direct;
  private final Build build;
  private final PostgresPrivateServer server; // null on the shared server

  private PostgresFaultFixture(String url, PostgresPrivateServer server, Build build) throws Exception {
    this.server = server;
    this.build = build;
    URI u = URI.create(url.substring("jdbc:".length()));
    this.proxy = FaultProxy.toLoopback(u.getPort());
    this.direct = PostgresTestSupport.pool(url, POOL);
    this.throughProxy = PostgresTestSupport.pool(url.replace("//" + u.getHost() + ":" + u.getPort() + "/",
        "//" + proxy.host() + ":" + proxy.port() + "/"), POOL);
    // The engine's and the limiter's docs ask for a pool that waits no longer than the limiter's
    // deadline for a connection: HikariCP's least, 250 ms, is the kit's deadline.
    throughProxy.setConnectionTimeout(FaultContract.DEADLINE.toMillis());
    throughProxy.setValidationTimeout(FaultContract.DEADLINE.toMillis());
  }

  /**
   * The server at {@code url} (the shared one, as a role of the test's choice), behind the proxy.
   * Skipped, or failed under CI=true, when it is unreachable.
   */
  public static PostgresFaultFixture shared(String url, Build build) throws Exception {
    PostgresTestSupport.requireServer();
    return new PostgresFaultFixture(url, null, build);
  }

  /** A private server of this fixture's own, database {@code sluice}, behind the proxy; {@code schema} runs on it first. */
  public static PostgresFaultFixture privateServer(Build build, Build schema) throws Exception {
    PostgresPrivateServer server = PostgresPrivateServer.start();
    try {
      try (Connection c = DriverManager.getConnection(server.url("postgres")); Statement s = c.createStatement()) {
        s.execute("CREATE DATABASE sluice");
      }
      PostgresFaultFixture f = new PostgresFaultFixture(server.url(), server, build);
      schema.over(f.direct, setup(Policy.fixedWindow("schema", 1, Duration.ofSeconds(1))));
      return f;
    } catch (Exception | Error e) {
      server.close();
      throw e;
    }
  }

  private static FaultContract.Setup setup(Policy p) {
    return new FaultContract.Setup(p, Duration.ofSeconds(5), false, FailureMode.closed(), new Ticket.Issuer());
  }

  @Override public FaultProxy proxy() {
    return proxy;
  }

  @Override public RateLimiter limiter(FaultContract.Setup setup) throws Exception {
    return build.over(throughProxy, setup);
  }

  @Override public RateLimiter direct(Policy policy) throws Exception {
    return build.over(direct, setup(policy));
  }

  @Override public Optional<FaultContract.Store> store() {
    if (server == null) {
      return Optional.empty();
    }
    return Optional.of(new FaultContract.Store() {
      @Override public void stop() throws Exception {
        server.stopServer();
      }

      @Override public void start() throws Exception {
        server.startServer();
      }

      @Override public void freeze() throws Exception {
        server.freeze(true);
      }

      @Override public void thaw() throws Exception {
        server.freeze(false);
      }
    });
  }

  @Override public void close() {
    throughProxy.close();
    direct.close();
    proxy.close();
    if (server != null) {
      server.close();
    }
  }
}

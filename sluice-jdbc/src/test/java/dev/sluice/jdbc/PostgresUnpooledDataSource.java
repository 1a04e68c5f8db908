package dev.sluice.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A new physical connection per {@link #getConnection()}: no pool, no validation queries. */
final class PostgresUnpooledDataSource implements DataSource {
  private final String url;
  /** Connections opened so far (each backend's startup commits one catalog transaction of its own). */
  final java.util.concurrent.atomic.AtomicLong opened = new java.util.concurrent.atomic.AtomicLong();

  PostgresUnpooledDataSource(String url) {
    this.url = url;
  }

  @Override public Connection getConnection() throws SQLException {
    opened.incrementAndGet();
    return DriverManager.getConnection(url);
  }

  @Override public Connection getConnection(String user, String password) throws SQLException {
    return DriverManager.getConnection(url, user, password);
  }

  @Override public PrintWriter getLogWriter() { return null; }

  @Override public void setLogWriter(PrintWriter out) {}

  @Override public void setLoginTimeout(int seconds) {}

  @Override public int getLoginTimeout() { return 0; }

  @Override public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override public boolean isWrapperFor(Class<?> iface) { return false; }
}

/**
 * Sluice on PostgreSQL: {@link dev.sluice.jdbc.JdbcRateLimiter} decides each check in one SQL
 * statement over a JDBC {@link javax.sql.DataSource}.
 */
module dev.sluice.jdbc {
  requires transitive dev.sluice.core;
  requires transitive java.sql;

  exports dev.sluice.jdbc;
}

/**
 * Sluice over JDBC: {@link dev.sluice.jdbc.JdbcRateLimiter} decides each check in one SQL statement
 * on PostgreSQL; {@link dev.sluice.jdbc.store.JdbcVersionedStore} is a generic versioned store
 * (PostgreSQL, MariaDB, plain SQL with a version column) for the compare-and-set engine.
 */
module dev.sluice.jdbc {
  requires transitive dev.sluice.core;
  requires transitive java.sql;

  exports dev.sluice.jdbc;
  exports dev.sluice.jdbc.store;
}

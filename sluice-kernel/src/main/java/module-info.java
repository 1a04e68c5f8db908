/**
 * The Sluice application kernel: what every front end (the service, the Spring starter, the HTTP
 * filters, a later gateway or framework adapter) builds its application from, with no web framework
 * in it. The Redis and PostgreSQL stores are read statically: a memory-only application needs
 * neither Lettuce nor a JDBC driver.
 */
@SuppressWarnings("requires-automatic") // lettuce.core and com.zaxxer.hikari ship no module descriptor
module dev.sluice.kernel {
  requires transitive dev.sluice.core;
  requires static dev.sluice.redis;
  requires static lettuce.core;
  requires static dev.sluice.jdbc;
  requires static java.sql;
  requires static com.zaxxer.hikari;

  exports dev.sluice.kernel;

  // A store added later (another Redis client, Hazelcast) is a StoreFactory its own module provides.
  uses dev.sluice.kernel.StoreFactory;
}

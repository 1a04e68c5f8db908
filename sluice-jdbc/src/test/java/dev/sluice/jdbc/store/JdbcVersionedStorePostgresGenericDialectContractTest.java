package dev.sluice.jdbc.store;

import dev.sluice.spi.VersionedStore;
import dev.sluice.tck.VersionedStoreContract;

/**
 * The plain-SQL dialect (what any other database gets: a plain INSERT whose unique-key violation means
 * "exists", no LIMIT) keeps the contract too, checked on PostgreSQL.
 */
class JdbcVersionedStorePostgresGenericDialectContractTest extends VersionedStoreContract {
  @Override protected VersionedStore newStore() {
    JdbcVersionedStoreDatabases.store(JdbcVersionedStoreDatabases.postgres(), JdbcVersionedStoreDatabases.CONTRACT_TABLE);
    return JdbcVersionedStore.builder(JdbcVersionedStoreDatabases.postgres()).table(JdbcVersionedStoreDatabases.CONTRACT_TABLE)
        .dialect(JdbcVersionedStore.Dialect.GENERIC).build();
  }
}

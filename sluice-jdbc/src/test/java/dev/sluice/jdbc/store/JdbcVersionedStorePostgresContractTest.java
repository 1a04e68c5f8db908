package dev.sluice.jdbc.store;

import dev.sluice.spi.VersionedStore;
import dev.sluice.tck.VersionedStoreContract;

/** {@link JdbcVersionedStore} on Postgres keeps the SPI's contract. */
class JdbcVersionedStorePostgresContractTest extends VersionedStoreContract {
  @Override protected VersionedStore newStore() {
    return JdbcVersionedStoreDatabases.store(JdbcVersionedStoreDatabases.postgres(), JdbcVersionedStoreDatabases.CONTRACT_TABLE);
  }
}

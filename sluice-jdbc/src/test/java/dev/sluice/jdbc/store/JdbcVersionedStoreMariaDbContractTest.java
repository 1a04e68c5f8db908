package dev.sluice.jdbc.store;

import dev.sluice.spi.VersionedStore;
import dev.sluice.tck.VersionedStoreContract;

/** {@link JdbcVersionedStore} on MariaDb keeps the SPI's contract. */
class JdbcVersionedStoreMariaDbContractTest extends VersionedStoreContract {
  @Override protected VersionedStore newStore() {
    return JdbcVersionedStoreDatabases.store(JdbcVersionedStoreDatabases.mariadb(), JdbcVersionedStoreDatabases.CONTRACT_TABLE);
  }
}

package dev.sluice.tck;

import dev.sluice.spi.VersionedStore;
import dev.sluice.store.InMemoryVersionedStore;

/** The in-memory reference store keeps the SPI's contract. */
class InMemoryVersionedStoreContractTest extends VersionedStoreContract {
  @Override protected VersionedStore newStore() {
    return new InMemoryVersionedStore();
  }
}

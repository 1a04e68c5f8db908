/**
 * Sluice core: the rate-limiter API, the reference algorithms, the bounded memory tier and the
 * versioned-store SPI. No runtime dependencies.
 */
module dev.sluice.core {
  exports dev.sluice;
  exports dev.sluice.model;
  exports dev.sluice.memory;
  exports dev.sluice.compose;
  exports dev.sluice.spi;
  exports dev.sluice.store;
  exports dev.sluice.guard;
  // Validation and hashing shared by the backends; not API.
  exports dev.sluice.internal to dev.sluice.tck, dev.sluice.redis, dev.sluice.jdbc, dev.sluice.http,
      dev.sluice.micrometer, dev.sluice.mcp, dev.sluice.server, dev.sluice.spring.autoconfigure;
}

/**
 * Sluice core: the rate-limiter API, the reference algorithms, the bounded memory tier and the
 * versioned-store SPI. No runtime dependencies.
 */
module dev.sluice.core {
  exports dev.sluice;
  // The reference model is the specification every backend is checked against (through the kit,
  // sluice-tck); its scratch Outcome is mutable, so it is not API: only the kit and the backends that
  // run the model themselves (SQL beside its statements, Hazelcast in its entry processor) read it.
  exports dev.sluice.model to dev.sluice.tck, dev.sluice.jdbc, dev.sluice.hazelcast;
  exports dev.sluice.memory;
  exports dev.sluice.compose;
  exports dev.sluice.spi;
  exports dev.sluice.store;
  exports dev.sluice.guard;
  exports dev.sluice.testing;
  // Validation, stored ids and the pipeline parts shared by the backends and the application kernel
  // (which offers the front ends what they need of it as public API: Inputs, Keys, PolicyWords); not API.
  exports dev.sluice.internal to dev.sluice.tck, dev.sluice.redis, dev.sluice.jdbc, dev.sluice.kernel,
      dev.sluice.hazelcast;
}

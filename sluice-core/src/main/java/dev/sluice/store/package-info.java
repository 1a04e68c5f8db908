/**
 * The durable tier over any versioned store: {@link dev.sluice.store.VersionedStoreRateLimiter}, the
 * compare-and-set engine that runs the reference model client-side over a
 * {@link dev.sluice.spi.VersionedStore}, its {@link dev.sluice.store.SweepResult}, and
 * {@link dev.sluice.store.InMemoryVersionedStore}, the reference store for tests.
 */
package dev.sluice.store;

/**
 * The seams a store implements. A store that runs one atomic operation per decision implements
 * {@link dev.sluice.spi.Backend} (its {@link dev.sluice.spi.Capabilities} stated once), and the core's
 * one final {@link dev.sluice.spi.StoreRateLimiter} owns the pipeline around it. A store that can
 * only read and compare-and-set implements {@link dev.sluice.spi.VersionedStore}, and the
 * compare-and-set engine ({@code dev.sluice.store}) runs the model over it. Either way the
 * algorithms stay in the core.
 */
package dev.sluice.spi;

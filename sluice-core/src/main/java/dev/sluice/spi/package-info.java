/**
 * The versioned-store SPI: the narrow seam a database implements so that Sluice's durable tier can
 * run over it ({@link dev.sluice.spi.VersionedStore}). The algorithms stay in the core; a store only
 * reads, compares-and-sets, lists and deletes-if-unchanged.
 */
package dev.sluice.spi;

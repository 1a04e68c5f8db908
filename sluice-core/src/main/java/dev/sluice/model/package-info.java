/**
 * The reference model: the pure step function of each algorithm, the oracle every backend is tested
 * against by the conformance kit ({@code sluice-tck}). Store authors can run it client-side; the
 * compare-and-set engine does.
 */
package dev.sluice.model;

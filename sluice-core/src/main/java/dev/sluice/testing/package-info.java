/**
 * Aids for tests of code that uses Sluice: {@link dev.sluice.testing.ManualTicker}, a clock that
 * moves only when told to, so that windows, refills and retry delays are tested without waiting.
 */
package dev.sluice.testing;

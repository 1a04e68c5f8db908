/** Micrometer meters for Sluice limiters. */
module dev.sluice.micrometer {
  requires transitive dev.sluice.core;
  requires dev.sluice.kernel;
  requires transitive micrometer.core;

  exports dev.sluice.micrometer;
}

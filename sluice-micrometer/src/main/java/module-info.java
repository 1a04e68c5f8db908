/** Micrometer meters for Sluice limiters. */
module dev.sluice.micrometer {
  requires transitive dev.sluice.core;
  requires transitive micrometer.core;

  exports dev.sluice.micrometer;
}

/** Sluice conformance kit: abstract JUnit 5 suites every backend subclasses. */
module dev.sluice.tck {
  requires transitive dev.sluice.core;
  requires transitive org.junit.jupiter.api;
  requires transitive org.junit.jupiter.params;
  requires org.assertj.core;
  exports dev.sluice.tck;
}

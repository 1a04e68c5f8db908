package dev.sluice.compose;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters behind {@link CompositionStats}, shared by the parts of one composition (the all-of
 * legs, the shared state), and its one warning: the first trouble is logged as a warning, the rest
 * at debug level, so a leg that keeps throwing does not flood the log.
 */
final class CompositionCounters {
  private static final System.Logger LOG = System.getLogger(Composition.class.getName());

  final LongAdder decisions = new LongAdder();
  final LongAdder refusals = new LongAdder();
  final LongAdder legErrors = new LongAdder();
  final LongAdder compensations = new LongAdder();
  final LongAdder failedCompensations = new LongAdder();
  final LongAdder sharedFailures = new LongAdder();
  private final AtomicBoolean warned = new AtomicBoolean();

  void warn(String what, Throwable e) {
    LOG.log(warned.compareAndSet(false, true) ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG, what, e);
  }

  void reset() {
    decisions.reset();
    refusals.reset();
    legErrors.reset();
    compensations.reset();
    failedCompensations.reset();
    sharedFailures.reset();
  }
}

package dev.sluice.server;

/**
 * The POSIX signals {@code sluice serve} handles itself instead of leaving them to the JVM.
 *
 * <p>The JVM's own handling of SIGTERM and SIGINT runs the shutdown hooks and then exits with 128 plus
 * the signal (143, 130), which an orchestrator reads as a crash; and SIGHUP, unhandled, kills the
 * process. Handling them here lets the service drain and then exit 0, as a clean stop should.
 */
final class Signals {
  private Signals() {}

  /** Runs {@code action} (on the JVM's signal thread) on each SIGTERM and SIGINT. */
  static void onStop(Runnable action) {
    on("TERM", action);
    on("INT", action);
  }

  /**
   * Runs {@code action} (on the JVM's signal thread) on each SIGHUP: reload, the daemon convention.
   * Returns false when SIGHUP was ignored as the process started (as {@code nohup} does): the JVM
   * then keeps it ignored and never runs the action, so the caller says reload by signal is off.
   */
  static boolean onReload(Runnable action) {
    return on("HUP", action);
  }

  private static boolean on(String name, Runnable action) {
    // Named here, never imported: javac under --release 17 warns on every use of sun.misc.Signal
    // ("internal proprietary API", a warning no annotation suppresses), and an import is what javadoc,
    // which reads no method body, saw of it, failing the release's javadoc jar on that warning (issue 27,
    // finding 7). CI builds that jar (.ci/run), so an import put back fails there.
    return sun.misc.Signal.handle(new sun.misc.Signal(name), s -> action.run()) != sun.misc.SignalHandler.SIG_IGN;
  }
}

package dev.sluice.jdbc.internal;

/**
 * A worker's wait for a connection, which whoever no longer needs it can end: {@link #abandon()}
 * interrupts the waiting thread, and only while it waits ({@link #begin()} to {@link #end()}), so
 * no interrupt is ever left on a thread that went on to other work.
 *
 * <p>Why interrupt: a pool keeps a borrower waiting until its own connection timeout (HikariCP:
 * 30 s by default), long after the caller was answered at its deadline, and a pool that sees
 * borrowers waiting keeps retrying a lost server with a growing back-off (see
 * {@link ConnectionGate}). An interrupted HikariCP borrower leaves at once with an
 * {@link java.sql.SQLException}; a driver that connects on the calling thread over a blocking socket
 * ignores the interrupt and finishes.
 *
 * <p>Not API: this package is not exported.
 */
public final class ConnectionWait {
  private Thread waiter;
  private boolean abandoned;

  /** The calling thread starts waiting; false when the wait was already abandoned. */
  public synchronized boolean begin() {
    if (abandoned) {
      return false;
    }
    waiter = Thread.currentThread();
    return true;
  }

  /** The wait is over; false when it was abandoned, and then this thread's interrupt is cleared. */
  public synchronized boolean end() {
    waiter = null;
    if (abandoned) {
      Thread.interrupted();
      return false;
    }
    return true;
  }

  /** Nobody needs the connection any longer: a thread waiting for it is interrupted. */
  public synchronized void abandon() {
    abandoned = true;
    if (waiter != null) {
      waiter.interrupt();
    }
  }

  public synchronized boolean abandoned() {
    return abandoned;
  }
}

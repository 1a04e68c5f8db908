package dev.sluice.spi;

/**
 * A store call that certainly did not reach the store (no connection, nothing sent): nothing was
 * applied. A refund that fails this way leaves its ticket refundable; any other
 * {@link StoreException} leaves the outcome unknown, and the ticket spent.
 */
public class StoreNotReachedException extends StoreException {
  private static final long serialVersionUID = 1L;

  public StoreNotReachedException(String message) {
    super(message);
  }

  public StoreNotReachedException(String message, Throwable cause) {
    super(message, cause);
  }
}

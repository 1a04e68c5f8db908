package dev.sluice.spi;

/**
 * A {@link VersionedStore} call failed: the store could not be reached or answered with an error.
 * The outcome of a write that failed this way is unknown. The limiter turns it into a decision under
 * its failure mode ({@code Reason.STORE_UNAVAILABLE}); it never reaches the limiter's caller.
 */
public class StoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StoreException(String message) {
    super(message);
  }

  public StoreException(String message, Throwable cause) {
    super(message, cause);
  }
}

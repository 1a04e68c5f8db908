package dev.sluice.spi;

/**
 * A {@link VersionedStore} call did not complete by its deadline. The outcome of a write that timed
 * out is unknown: it may still be applied later. The limiter decides it as {@code Reason.TIMEOUT}
 * under its failure mode.
 */
public class StoreTimeoutException extends StoreException {
  private static final long serialVersionUID = 1L;

  public StoreTimeoutException(String message) {
    super(message);
  }

  public StoreTimeoutException(String message, Throwable cause) {
    super(message, cause);
  }
}

package dev.sluice.guard;

/**
 * Told when {@link RateLimitGuard} failed open. Use it to alert: while the store is down the guard
 * does not throttle. A handler that throws is logged and ignored; the guarded call still proceeds.
 */
@FunctionalInterface
public interface StoreErrorHandler {
  /** Logs the failure at WARNING through {@link System.Logger}. The guard's default. */
  StoreErrorHandler LOG = error -> System.getLogger(RateLimitGuard.class.getName()).log(System.Logger.Level.WARNING,
      "rate limiter could not decide for policy '" + error.policy().name() + "' (" + error.reason()
          + "); allowed the call (guard fails open)", error.cause());

  void onStoreError(StoreError error);
}

package dev.sluice.internal;

import dev.sluice.spi.StoreException;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The one rule of an administrative call on a store (an override set, cleared or read): what the
 * store or its client threw reaches the caller as a {@link StoreException} naming the store and the
 * call, never as a decision and never as a checked exception of the client; a bad argument stays an
 * {@link IllegalArgumentException}; an interrupt is kept.
 */
public final class AdminCalls {
  private AdminCalls() {}

  /** Runs {@code call}, {@code what} (for the message: "Redis: override of a key") failing as a {@link StoreException}. */
  public static <T> T run(String what, Callable<T> call) {
    try {
      return call.call();
    } catch (StoreException | IllegalArgumentException e) {
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreException(what + ": interrupted", e);
    } catch (ExecutionException | CompletionException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw cause instanceof StoreException se ? se : new StoreException(what + " failed: " + cause, cause);
    } catch (Exception e) {
      throw new StoreException(what + " failed: " + e, e);
    }
  }
}

package dev.sluice.jdbc;

import dev.sluice.Reason;

/**
 * A store failure on its way from the worker to the waiting caller, which turns it into a decision
 * (so the failure mode and its alert run once). No stack trace: it is expected.
 */
final class StoreFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;
  final Reason reason;

  StoreFailure(Reason reason, Throwable cause) {
    super(reason.name(), cause, false, false);
    this.reason = reason;
  }
}

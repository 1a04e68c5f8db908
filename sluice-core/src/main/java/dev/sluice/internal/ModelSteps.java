package dev.sluice.internal;

import dev.sluice.Ticket;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.StepResult;

/**
 * The one mapping from a reference step's {@link Outcome} to a pipeline {@link StepResult}, for the
 * backends that run the model themselves (the versioned-store engine, PostgreSQL's batch fields). The
 * model is not API ({@code dev.sluice.model} is exported only to Sluice's modules), so neither is this.
 */
public final class ModelSteps {
  private ModelSteps() {}

  /**
   * The result of a reference step run by the backend: decided, or corrupt when the model refused a
   * state further ahead of the clock than its policy could have written it, or an invalid clock.
   */
  public static StepResult of(Outcome out) {
    if (out.corrupt()) {
      return StepResult.corrupt("the state lies further ahead of the clock than its policy could have written it "
          + "(more than Checks.CLOCK_TOLERANCE_MICROS beyond)");
    }
    if (out.invalidClock()) {
      return StepResult.invalidClock("clock reading outside 1..2^52 - 2^49 microseconds");
    }
    return StepResult.decided(out.allowed(), out.remaining(), out.resetAt(), out.retryAfter(), out.stamp(), out.wrote());
  }

  /**
   * The instant (epoch us) from which {@code ticket} no longer changes its budget
   * ({@link ReferenceModel#ticketExpiresAt}), for a backend that keeps the ticket's spent record
   * until then (Redis's spent key, PostgreSQL's spent row).
   */
  public static long ticketExpiresAt(Ticket ticket) {
    return ReferenceModel.ticketExpiresAt(ticket.policy().algorithm(), ticket.stamp());
  }
}

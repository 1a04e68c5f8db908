package dev.sluice.http;

import dev.sluice.Decision;
import dev.sluice.Ticket;
import dev.sluice.kernel.Inputs;
import dev.sluice.kernel.RefundRule;
import java.util.function.BiConsumer;
import java.util.function.Function;

/** One request's verdict and, after the handler ran, its refunds or settlement. Not thread-safe beyond {@link #complete}. */
final class Admission {
  private static final System.Logger LOG = System.getLogger(Admission.class.getName());
  private static final java.util.regex.Pattern WHOLE = java.util.regex.Pattern.compile("-?[0-9]{1,19}");

  private final HttpRateLimit config;
  final HttpVerdict verdict;
  private final Decision primary;
  private final Decision ceiling;
  private boolean completed;

  Admission(HttpRateLimit config, HttpVerdict verdict, Decision primary, Decision ceiling) {
    this.config = config;
    this.verdict = verdict;
    this.primary = primary;
    this.ceiling = ceiling;
  }

  /** Sets the response headers of the verdict. */
  void headers(BiConsumer<String, String> out) {
    for (HttpVerdict.Header h : verdict.headers()) {
      out.accept(h.name(), h.value());
    }
  }

  /**
   * The handler finished: it threw ({@code threw}) or answered {@code status} (negative when unknown).
   * Refunds under skipFailedRequests / skipSuccessfulRequests; otherwise, with a cost configured,
   * settles at the usage the handler reported ({@code usage} looks a name up: the request
   * attribute, then the response header). Runs once.
   */
  synchronized void complete(boolean threw, int status, Function<String, Object> usage) {
    if (completed || !verdict.allowed()) {
      return;
    }
    completed = true;
    if (config.refunds(threw, status)) {
      primary.ticket().ifPresent(config.limiter::refund);
      if (ceiling != null) {
        ceiling.ticket().ifPresent(config.ceilingLimiter::refund);
      }
    } else if (config.usage != null && !threw) {
      settle(usage.apply(config.usage));
    }
  }

  private void settle(Object reported) {
    if (reported == null) {
      return; // nothing reported: the estimate stays charged
    }
    Ticket t = primary.ticket().orElse(null);
    try {
      String v = reported.toString().trim(); // a whole Number (Long, Integer, ...) or a decimal string
      if (!WHOLE.matcher(v).matches()) {
        throw new NumberFormatException(v);
      }
      long actual = Long.parseLong(v); // more than 19 digits: NumberFormatException
      if (t != null) {
        config.limiter.settle(t, actual);
      }
      if (ceiling != null && ceiling.ticket().isPresent()) {
        config.ceilingLimiter.settle(ceiling.ticket().get(), actual);
      }
    } catch (NumberFormatException e) {
      LOG.log(System.Logger.Level.WARNING, "usage " + config.usage + " " + Inputs.quote(reported.toString())
          + " is not a whole number; the estimate of " + config.reserve + " stays charged");
    } catch (IllegalArgumentException e) {
      LOG.log(System.Logger.Level.WARNING, "usage " + config.usage + ": " + e.getMessage() + "; the estimate stays charged");
    }
  }

  /** True when the handler's outcome matters: a refund option or a cost to settle. */
  boolean refundsPossible() {
    return config.refundRule != RefundRule.NEVER || config.usage != null;
  }
}

package dev.sluice.spring.gateway;

import dev.sluice.kernel.RefundRule;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;

/**
 * A route's {@code refund-on}: the downstream statuses after which the route's charge is given back.
 * The words {@code failure} and {@code success} are the kernel's {@link RefundRule} (a throw or 5xx;
 * a known status below 400), the rule of the HTTP filters' skip options; a status ({@code 404}) or
 * a class of them ({@code 4xx}) names statuses besides. Immutable.
 */
final class RefundOn {
  static final RefundOn NEVER = new RefundOn(RefundRule.NEVER, new BitSet());

  private final RefundRule rule;
  private final BitSet statuses;

  private RefundOn(RefundRule rule, BitSet statuses) {
    this.rule = rule;
    this.statuses = statuses;
  }

  /** The words of {@code values}; {@code where} names the setting in the message of a word that is none. */
  static RefundOn parse(String where, List<String> values) {
    if (values == null || values.isEmpty()) {
      return NEVER;
    }
    boolean failure = false;
    boolean success = false;
    BitSet statuses = new BitSet(600);
    for (String raw : values) {
      String v = raw == null ? "" : raw.strip().toLowerCase(Locale.ROOT);
      if (v.equals("failure")) {
        failure = true;
      } else if (v.equals("success")) {
        success = true;
      } else if (v.matches("[1-5]xx")) {
        int c = (v.charAt(0) - '0') * 100;
        statuses.set(c, c + 100);
      } else if (v.matches("[1-5][0-9][0-9]")) {
        statuses.set(Integer.parseInt(v));
      } else {
        throw new IllegalArgumentException(where + " '" + raw + "' is unknown; use failure, success, a status (503) or a class (5xx)");
      }
    }
    RefundRule rule = RefundRule.of(failure, success, where + " names both failure and success: then nothing would be charged");
    return new RefundOn(rule, statuses);
  }

  /** True when nothing is ever refunded: no need to watch the response. */
  boolean never() {
    return rule == RefundRule.NEVER && statuses.isEmpty();
  }

  /** Whether a request whose downstream threw ({@code threw}) or answered {@code status} gets its charge back. */
  boolean refunds(boolean threw, int status) {
    return rule.refunds(threw, status) || (!threw && status > 0 && status < 600 && statuses.get(status));
  }
}

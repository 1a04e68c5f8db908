package dev.sluice.spring;

import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;

/**
 * Turns Sluice's configuration errors into Boot's failure-analysis report, wherever they surface in
 * the start-up failure (a rule's error arrives wrapped in "Unable to start web server"). Every such
 * error's message starts with what it is about, the property path ({@code sluice.policies: policy #1
 * ('api'): ...}, {@code sluice.http.rules[0].policy: ...}) or the annotated method
 * ({@code @RateLimited on ...}), and goes on with the value and the rule; the report shows it as the
 * description, without a stack trace.
 */
final class SluiceFailureAnalyzer implements FailureAnalyzer {
  @Override public FailureAnalysis analyze(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if ((t instanceof IllegalArgumentException || t instanceof IllegalStateException) && isSluices(t.getMessage())) {
        return new FailureAnalysis("Sluice's configuration is invalid: " + t.getMessage(),
            "Correct the property or annotation named at the start of the description (the description gives its value "
                + "and the rule); every sluice.* property is listed in Sluice's docs/spring-boot.md.", t);
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  private static boolean isSluices(String message) {
    return message != null && (message.startsWith("sluice.") || message.startsWith("@RateLimited on "));
  }
}

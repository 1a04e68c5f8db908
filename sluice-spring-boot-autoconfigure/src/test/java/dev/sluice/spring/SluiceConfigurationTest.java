package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.sluice.RateLimiter;
import dev.sluice.memory.MemoryRateLimiter;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/**
 * Mistakes in {@code sluice.*} stop the application at start-up with a message naming the entry,
 * the value and the rule: the policy shape's messages (the service's), and the rules' own.
 * Without a web server (the auto-configuration alone, in a servlet context), except for an
 * annotation naming no policy, which a real application must refuse to start with.
 */
class SluiceConfigurationTest {
  final WebApplicationContextRunner runner = new WebApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class));

  static String[] policy(String... more) {
    String[] base = {"sluice.policies[0].name=api", "sluice.policies[0].algorithm=fixed-window", "sluice.policies[0].limit=5"};
    String[] all = java.util.Arrays.copyOf(base, base.length + more.length);
    System.arraycopy(more, 0, all, base.length, more.length);
    return all;
  }

  /** The outermost IllegalArgumentException under the start-up failure: Sluice's message, which the operator reads. */
  static Throwable cause(org.springframework.boot.test.context.assertj.AssertableWebApplicationContext ctx) {
    assertThat(ctx).hasFailed();
    for (Throwable t = ctx.getStartupFailure(); t != null; t = t.getCause()) {
      if (t instanceof IllegalArgumentException) {
        return t;
      }
    }
    throw new AssertionError("no IllegalArgumentException under " + ctx.getStartupFailure());
  }

  @Test void aGoodPolicyIsABeanByName() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m")).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx.getBean("sluiceLimiter.api", RateLimiter.class)).isInstanceOf(MemoryRateLimiter.class);
      assertThat(ctx.getBean(RateLimiterRegistry.class).limiter("api").policy().algorithm().id()).isEqualTo("fixed-window");
    });
  }

  @Test void aDurationWithoutAUnitIsRefusedWithTheShapesMessage() {
    runner.withPropertyValues(policy("sluice.policies[0].window=60")).run(ctx -> assertThat(cause(ctx)).hasMessage("sluice.policies: policy #1 ('api'): 'window' is 60 without a unit; write e.g. 60s or 60ms"));
    runner.withPropertyValues(policy("sluice.policies[0].window=a minute")).run(ctx -> assertThat(cause(ctx)).hasMessage(
        "sluice.policies: policy #1 ('api'): 'window' 'a minute' is not a duration; write a whole "
            + "number and a unit (us, ms, s, m, h, d) such as 500ms or 1m, or ISO-8601 such as PT1M30S"));
  }

  @Test void aParameterOfAnotherAlgorithmIsRefused() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.policies[0].capacity=3")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.policies: policy #1 ('api'): unknown parameter 'capacity'; fixed-window takes limit, window"));
  }

  @Test void aRuleNamingNoKnownPolicyIsRefused() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=apj")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.rules[0].policy: no policy named 'apj' in sluice.policies; the policies are [api]"));
  }

  @Test void aKeyThatIsNotAnExpressionIsRefused() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].key=header('X-Api-Key'")).run(ctx ->
        assertThat(cause(ctx)).hasMessageStartingWith("sluice.http.rules[0].key 'header('X-Api-Key'' is not a SpEL expression: "));
  }

  /** Issue 28, item 3: the failure mode is read by the service's parser, whichever store runs. */
  @Test void aFailureModeOutsideTheThreeWordsIsRefusedWithTheParsersMessage() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.failure-mode=fail-open")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.failure-mode 'fail-open' is unknown; use closed, open or fallback"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.failure-mode=Fallback")).run(ctx ->
        assertThat(ctx).hasNotFailed());
  }

  /** A bean whose method names a policy {@code sluice.policies} does not have. */
  static class Misnamed {
    @RateLimited(policy = "per-usr", key = "#user")
    public String greet(String user) {
      return "hello " + user;
    }
  }

  /**
   * Issue 27, finding 6: a {@code @RateLimited} naming a policy that does not exist let the
   * application start, and its first call answered 500 (an IllegalStateException). The application
   * now fails while its context refreshes, naming the method, the name and the policies there are.
   * A real application, started as an application is (it never gets as far as its port).
   */
  @Test void aRateLimitedNamingNoPolicyStopsTheApplicationAtStart() {
    Throwable failure = catchThrowable(() -> Apps.startWith(new Class<?>[] {Misnamed.class}).close());
    assertThat(failure).as("the application started").isNotNull();
    Throwable cause = failure;
    while (cause.getCause() != null && !(cause instanceof IllegalStateException && cause.getMessage().startsWith("@RateLimited"))) {
      cause = cause.getCause();
    }
    assertThat(cause).isInstanceOf(IllegalStateException.class).hasMessage("@RateLimited on " + Misnamed.class.getName()
        + ".greet: no policy named 'per-usr' in sluice.policies; the policies are "
        + "[api, login, per-user, pair-user, pair-all, tokens, token-calls, bulk, load, small, large, paced]");
  }

  /**
   * Issue 32: a typo'd parameter ({@code windw: 1m}) was dropped by Spring's binder, and the start
   * failed with "'window' is missing"; it is now named, with the service's message for it.
   */
  @Test void aTypodPolicyParameterIsNamedNotReportedAsMissing() {
    runner.withPropertyValues(policy("sluice.policies[0].windw=1m")).run(ctx -> assertThat(cause(ctx))
        .hasMessage("sluice.policies: policy #1 ('api'): unknown parameter 'windw'; fixed-window takes limit, window"));
  }

  /**
   * Issue 32: Sluice's configuration errors reached the operator as raw exceptions with stack traces
   * (a rule's wrapped in "Unable to start web server"). Boot's failure analysis now reports them: the
   * analyzer is registered, and finds the message, property path first, under the wrappers.
   */
  @Test void aConfigurationErrorIsReportedByBootsFailureAnalysis() {
    assertThat(org.springframework.core.io.support.SpringFactoriesLoader.loadFactoryNames(
        org.springframework.boot.diagnostics.FailureAnalyzer.class, getClass().getClassLoader()))
        .contains(SluiceFailureAnalyzer.class.getName());
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=apj"))
        .run(ctx -> {
          org.springframework.boot.diagnostics.FailureAnalysis a = new SluiceFailureAnalyzer().analyze(
              new IllegalStateException("Unable to start web server", ctx.getStartupFailure()));
          assertThat(a).isNotNull();
          assertThat(a.getDescription()).isEqualTo("Sluice's configuration is invalid: sluice.http.rules[0].policy: "
              + "no policy named 'apj' in sluice.policies; the policies are [api]");
          assertThat(a.getAction()).startsWith("Correct the property or annotation named at the start of the description");
        });
    assertThat(new SluiceFailureAnalyzer().analyze(new IllegalArgumentException("not ours"))).isNull();
  }

  /** Boot's failure-analysis report on {@code failure}: Sluice's analyzer must recognise it. */
  static org.springframework.boot.diagnostics.FailureAnalysis report(Throwable failure) {
    org.springframework.boot.diagnostics.FailureAnalysis a = new SluiceFailureAnalyzer().analyze(failure);
    assertThat(a).as("no Sluice report for %s", failure).isNotNull();
    assertThat(a.getAction()).startsWith("Correct the property or annotation named at the start of the description");
    return a;
  }

  /**
   * Issue 32, item 8: each misconfiguration stops the start and Boot's report names the property
   * path, the value and the fix. An unknown property under a rule is refused (the binder would drop
   * it, and a rule with a misspelt skip condition would charge what it was meant to skip).
   */
  @Test void anUnknownRulePropertyIsReportedWithItsPathValueAndTheRulesProperties() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].skip-condtion=method == 'HEAD'")).run(ctx -> assertThat(report(ctx.getStartupFailure()).getDescription())
        .isEqualTo("Sluice's configuration is invalid: sluice.http.rules[0].skip-condtion is not a rule property (its value "
            + "'method == 'HEAD''); a rule takes execute-condition, headers, key, methods, patterns, permits, policies, policy, "
            + "policy-expression, refund-condition, response, skip-condition, skip-on-failure, skip-on-success, skip-when-no-key"));
  }

  @Test void aConditionThatIsNotSpelIsReportedWithItsPathAndValue() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].execute-condition=header('X-Tier' == 'free'")).run(ctx -> assertThat(report(ctx.getStartupFailure())
        .getDescription()).startsWith("Sluice's configuration is invalid: sluice.http.rules[0].execute-condition "
            + "'header('X-Tier' == 'free'' is not a SpEL expression: "));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].refund-condition=getStatus() eq", "sluice.http.rules[0].skip-on-success=true")).run(ctx ->
        assertThat(report(ctx.getStartupFailure()).getDescription()).startsWith(
            "Sluice's configuration is invalid: sluice.http.rules[0].refund-condition 'getStatus() eq' is not a SpEL expression: "));
  }

  @Test void anUnknownAlgorithmIsReportedWithThePolicyTheValueAndTheAlgorithms() {
    runner.withPropertyValues("sluice.policies[0].name=api", "sluice.policies[0].algorithm=token-bukket",
        "sluice.policies[0].limit=5", "sluice.policies[0].window=1m").run(ctx -> assertThat(report(ctx.getStartupFailure())
        .getDescription()).startsWith("Sluice's configuration is invalid: sluice.policies: policy #1 ('api')")
        .contains("'token-bukket'").contains("fixed-window").contains("gcra"));
  }

  @Test void aRateLimitedNamingNoPolicyIsReportedByBootsFailureAnalysis() {
    Throwable failure = catchThrowable(() -> Apps.startWith(new Class<?>[] {Misnamed.class}).close());
    assertThat(report(failure).getDescription()).isEqualTo("Sluice's configuration is invalid: @RateLimited on "
        + Misnamed.class.getName() + ".greet: no policy named 'per-usr' in sluice.policies; the policies are "
        + "[api, login, per-user, pair-user, pair-all, tokens, token-calls, bulk, load, small, large, paced]");
  }

  /** The rules' other new settings: two refund rules at once, a policy named twice, a response outside 4xx/5xx. */
  @Test void theRulesNewSettingsAreCheckedAtStart() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].refund-condition=status == 401", "sluice.http.rules[0].skip-on-success=true")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.rules[0].refund-condition 'status == 401' is given with skip-on-success; "
            + "give one refund rule (skip-on-success is refund-condition \"status < 400\", skip-on-failure \"status >= 500\")"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policies[0]=api",
        "sluice.http.rules[0].policies[1]=api")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.rules[0].policies[1] names 'api' twice; a rule charges each policy once"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].policies[0]=api")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.rules[0] names policy 'api' and policies [api]; give one of them "
            + "(policies: [api, ...] charges them all)"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.response.status=302")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.response.status is 302; a refusal answers a client or server error, 400 to 599"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].response.content-type=json")).run(ctx ->
        assertThat(cause(ctx)).hasMessageStartingWith("sluice.http.rules[0].response.content-type 'json' is not a media type"));
  }

  /**
   * Issue 31: a rule's policy-expression that is not SpEL, given with policies, or whose fallback
   * policy cannot grant the rule's permits stops the start, reported with its path, value and fix.
   */
  @Test void aPolicyExpressionIsCheckedAtStart() {
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].policy-expression=@plans.of(header('X-Tenant')")).run(ctx ->
        assertThat(report(ctx.getStartupFailure()).getDescription()).startsWith("Sluice's configuration is invalid: "
            + "sluice.http.rules[0].policy-expression '@plans.of(header('X-Tenant')' is not a SpEL expression: "));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policies[0]=api",
        "sluice.http.rules[0].policy-expression=header('X-Plan')")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.rules[0].policy-expression 'header('X-Plan')' is given with policies "
            + "[api]; an expression chooses one policy per request: give policy (its fallback) instead of policies"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy-expression=header('X-Plan')"))
        .run(ctx -> assertThat(cause(ctx)).hasMessage("sluice.http.rules[0].policy is missing; name one of sluice.policies [api]"
            + " (with policy-expression: the policy of the requests it chooses none for)"));
    runner.withPropertyValues(policy("sluice.policies[0].window=1m", "sluice.http.rules[0].policy=api",
        "sluice.http.rules[0].permits=6", "sluice.http.rules[0].policy-expression=header('X-Plan')")).run(ctx ->
        assertThat(cause(ctx)).hasMessage("sluice.http.rules[0].policy 'api' allows 5 permits, below the rule's permits 6; "
            + "the fallback of policy-expression must grant a request"));
  }

  static class MisparsedPlan {
    @RateLimited(policy = "per-user", policyExpression = "@plans.of(#user", key = "#user")
    public String greet(String user) {
      return "hello " + user;
    }
  }

  /** Issue 31: an annotation's policyExpression that is not SpEL stops the start, reported with the method and the value. */
  @Test void aRateLimitedPolicyExpressionThatIsNotSpelIsReportedAtStart() {
    Throwable failure = catchThrowable(() -> Apps.startWith(new Class<?>[] {MisparsedPlan.class}).close());
    assertThat(report(failure).getDescription()).startsWith("Sluice's configuration is invalid: @RateLimited on "
        + MisparsedPlan.class.getName() + ".greet: policyExpression '@plans.of(#user' is not a SpEL expression: ");
  }

  /** A bean whose annotation's key is not SpEL, and one whose timeout is not a duration. */
  static class Misparsed {
    @RateLimited(policy = "per-user", key = "#user.")
    public String greet(String user) {
      return "hello " + user;
    }
  }

  static class Mistimed {
    @RateLimited(policy = "paced", key = "#user", timeout = "5 seconds")
    public String greet(String user) {
      return "hello " + user;
    }
  }

  /** Issue 32, item 8: an annotation's bad SpEL or timeout stops the start, reported with the method, the value and the fix. */
  @Test void aRateLimitedWithBadSpelOrTimeoutIsReportedAtStart() {
    Throwable failure = catchThrowable(() -> Apps.startWith(new Class<?>[] {Misparsed.class}).close());
    assertThat(report(failure).getDescription()).startsWith("Sluice's configuration is invalid: @RateLimited on "
        + Misparsed.class.getName() + ".greet: key '#user.' is not a SpEL expression: ");
    failure = catchThrowable(() -> Apps.startWith(new Class<?>[] {Mistimed.class}).close());
    assertThat(report(failure).getDescription()).isEqualTo("Sluice's configuration is invalid: @RateLimited on "
        + Mistimed.class.getName() + ".greet: timeout '5 seconds' is not a duration; write a whole number and a unit"
        + " (us, ms, s, m, h, d) such as 500ms or 1m, or ISO-8601 such as PT1M30S");
  }
}

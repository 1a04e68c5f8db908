package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The one parser of failure-mode words (the service's --failure-mode, the Spring starter's sluice.failure-mode). */
class FailureModeWordsTest {
  private final Policy login = Policy.fixedWindow("login", 2, Duration.ofMinutes(1));
  private final Policy api = Policy.fixedWindow("api", 1, Duration.ofMinutes(1));
  private final List<Reason> alerts = new ArrayList<>();
  private final FailureMode.FailureAlert alert = (policy, reason, cause) -> alerts.add(reason);

  private Function<Policy, FailureMode> parse(String value) {
    return FailureModeWords.parse("--failure-mode", value, alert, 10);
  }

  @Test void eachWordInAnyCaseNamesItsMode() {
    for (String closed : List.of("closed", "CLOSED", " Closed ")) {
      assertThat(parse(closed).apply(login)).isEqualTo(FailureMode.closed());
    }
    for (String open : List.of("open", "OPEN", "Open\n")) {
      assertThat(parse(open).apply(login)).isEqualTo(FailureMode.open(alert));
    }
    for (String fallback : List.of("fallback", "FALLBACK", "FallBack")) {
      assertThat(parse(fallback).apply(login)).isInstanceOf(FailureMode.Fallback.class);
    }
  }

  @Test void openAllowsAndTellsTheFrontEndsAlert() {
    Decision d = parse("open").apply(login).decide(login, "alice", 1, Reason.TIMEOUT, null, 1_000_000);
    assertThat(d.allowed()).isTrue();
    assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
    assertThat(alerts).containsExactly(Reason.TIMEOUT);
  }

  @Test void fallbackIsAMemoryLimiterOfTheSamePolicyForEachPolicy() {
    Function<Policy, FailureMode> modes = parse("fallback");
    FailureMode forLogin = modes.apply(login);
    FailureMode forApi = modes.apply(api);
    for (int i = 0; i < 2; i++) {
      Decision d = forLogin.decide(login, "alice", 1, Reason.STORE_UNAVAILABLE, null, 1);
      assertThat(d.allowed()).isTrue();
      assertThat(d.path()).isEqualTo(Path.FALLBACK);
    }
    Decision third = forLogin.decide(login, "alice", 1, Reason.STORE_UNAVAILABLE, null, 1);
    assertThat(third.allowed()).as("the policy's own limit, per instance").isFalse();
    assertThat(third.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
    assertThat(forApi.decide(api, "alice", 1, Reason.STORE_UNAVAILABLE, null, 1).allowed()).as("a limiter of its own").isTrue();
    assertThat(((FailureMode.Fallback) forLogin).local().policy()).isEqualTo(login);
  }

  @Test void theFallbackTracksAtMostTheFrontEndsMaxKeys() {
    FailureMode mode = FailureModeWords.parse("sluice.failure-mode", "fallback", alert, 1).apply(login);
    assertThat(mode.decide(login, "alice", 1, Reason.TIMEOUT, null, 1).allowed()).isTrue();
    assertThat(mode.decide(login, "bob", 1, Reason.TIMEOUT, null, 1).reason()).isEqualTo(Reason.KEY_TABLE_FULL);
  }

  @Test void aWordThatIsNoneOfTheThreeIsNamedWithTheAcceptedOnes() {
    assertThatThrownBy(() -> parse("maybe")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--failure-mode 'maybe' is unknown; use closed, open or fallback");
    assertThatThrownBy(() -> FailureModeWords.parse("sluice.failure-mode", "fail-open", alert, 10))
        .hasMessage("sluice.failure-mode 'fail-open' is unknown; use closed, open or fallback");
    assertThatThrownBy(() -> parse("")).hasMessage("--failure-mode '' is unknown; use closed, open or fallback");
    assertThatThrownBy(() -> parse(null)).hasMessage("--failure-mode is not set; use closed, open or fallback");
  }
}

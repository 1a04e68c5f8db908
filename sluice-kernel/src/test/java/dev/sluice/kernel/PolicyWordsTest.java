package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.internal.AlgorithmKind;
import dev.sluice.Policy;
import java.math.BigInteger;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The policy shape over plain maps, as the Spring binder hands it (the YAML path is sluice-server's PolicyFileTest). */
class PolicyWordsTest {
  @Test void entriesOfEveryAlgorithmRoundTripThroughDescribe() {
    List<Policy> ps = PolicyWords.policies(List.of(
        Map.of("name", "login", "algorithm", "fixed-window", "limit", 5L, "window", "1m"),
        Map.of("name", "api", "algorithm", "token-bucket", "capacity", 100, "refill-tokens", BigInteger.TEN, "refill-period", "1s"),
        Map.of("name", "search", "algorithm", "gcra", "rate", 2, "period", "PT1S", "burst", 10),
        Map.of("name", "pages", "algorithm", "sliding-window", "limit", 7, "window", "1500ms"),
        Map.of("name", "exports", "algorithm", "sliding-log", "limit", 3, "window", "1h")), "cfg");
    assertThat(ps).containsExactly(Policy.fixedWindow("login", 5, Duration.ofMinutes(1)),
        Policy.tokenBucket("api", 100, 10, Duration.ofSeconds(1)), Policy.gcra("search", 2, Duration.ofSeconds(1), 10),
        Policy.slidingWindow("pages", 7, Duration.ofMillis(1500)), Policy.slidingLog("exports", 3, Duration.ofHours(1)));
    for (Policy p : ps) {
      assertThat(PolicyWords.policy(PolicyWords.describe(p), "again")).isEqualTo(p);
    }
    assertThat(PolicyWords.describe(ps.get(1))).containsExactly(Map.entry("name", "api"), Map.entry("algorithm", "token-bucket"),
        Map.entry("capacity", 100L), Map.entry("refill-tokens", 10L), Map.entry("refill-period", "1s"));
    assertThat(AlgorithmKind.quotaMicros(ps.get(1).algorithm())).isEqualTo(10_000_000L);
  }

  /** Issue 32: Resilience4j's shared base configurations; a base's fields under the entry's own, chained, no loops. */
  @Test void anEntryInheritsTheFieldsOfItsBaseAndItsOwnWin() {
    List<Policy> ps = PolicyWords.policies(List.of(
        Map.of("name", "default", "algorithm", "fixed-window", "limit", 10, "window", "1m"),
        Map.of("name", "search", "base", "default", "limit", 3),
        Map.of("name", "export", "base", "search", "window", "1h"),
        Map.of("name", "bucket", "base", "default", "algorithm", "token-bucket", "capacity", 5, "refill-tokens", 1,
            "refill-period", "1s")), "test");
    assertThat(ps.get(1)).isEqualTo(Policy.fixedWindow("search", 3, java.time.Duration.ofMinutes(1)));
    assertThat(ps.get(2)).isEqualTo(Policy.fixedWindow("export", 3, java.time.Duration.ofHours(1)));
    assertThat(ps.get(3)).as("another algorithm inherits none of the base's parameters")
        .isEqualTo(Policy.tokenBucket("bucket", 5, 1, java.time.Duration.ofSeconds(1)));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> PolicyWords.policies(List.of(
        Map.of("name", "a", "base", "nope", "algorithm", "fixed-window", "limit", 1, "window", "1s")), "test"))
        .hasMessage("test: policy #1 ('a'): base 'nope' names no policy; give the name of another entry");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> PolicyWords.policies(List.of(
        Map.of("name", "a", "base", "b"), Map.of("name", "b", "base", "a")), "test"))
        .hasMessage("test: policy #1 ('a'): base 'b' comes back to itself (b -> a -> b); a base chain must end at an entry without a base");
  }

  @Test void anUnknownAlgorithmAndEveryCheckOfAnEntryKeepTheirMessagesAndOrder() {
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "leaky"), "cfg"))
        .hasMessage("cfg ('a'): unknown algorithm 'leaky'; use one of fixed-window, sliding-window, token-bucket, gcra, sliding-log");
    // every parameter is read before a period is checked, as the Policy factories' arguments are
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "gcra", "rate", 1, "period", "0s"), "cfg"))
        .hasMessage("cfg ('a'): 'burst' is missing");
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "token-bucket", "capacity", 1,
        "refill-tokens", 1, "refill-period", "0s"), "cfg"))
        .hasMessage("cfg ('a'): refill period PT0S is under 1 ms; use at least Duration.ofMillis(1)");
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a b", "algorithm", "fixed-window", "limit", 0, "window", "1s"), "cfg"))
        .hasMessageStartingWith("cfg ('a b'): limit 0");
  }

  @Test void aValueOfTheWrongKindIsNamed() {
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "fixed-window", "limit", 1.5, "window", "1s"), "cfg"))
        .hasMessage("cfg ('a'): 'limit' is 1.5; it must be a whole number");
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "fixed-window", "limit", "5", "window", "1s"), "cfg"))
        .hasMessage("cfg ('a'): 'limit' is \"5\"; it must be a whole number");
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "gcra", "rate", 1, "period", 1, "burst", 1), "cfg"))
        .hasMessage("cfg ('a'): 'period' is 1 without a unit; write e.g. 1s or 1ms");
    assertThatThrownBy(() -> PolicyWords.policy(Map.of("name", "a", "algorithm", "fixed-window", "limit", 1,
        "window", "1s", "capacity", 3), "cfg")).hasMessage("cfg ('a'): unknown parameter 'capacity'; fixed-window takes limit, window");
    assertThatThrownBy(() -> PolicyWords.policies(List.of(), "cfg")).hasMessage("cfg: 'policies' must be a non-empty list");
    assertThatThrownBy(() -> PolicyWords.duration("w", "5 fortnights"))
        .hasMessage("w '5 fortnights' is not a duration; write a whole number and a unit (us, ms, s, m, h, d) such as 500ms or 1m, or ISO-8601 such as PT1M30S");
  }
}

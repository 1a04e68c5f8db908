package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Policy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class PolicyFileTest {
  @Test void theExampleFileRunsOnEveryStore() {
    Path example = Path.of(System.getenv().getOrDefault("SLUICE_MODULE_DIR", "."), "..", "examples", "policies.yaml");
    List<Policy> ps = PolicyFile.read(example);
    assertThat(ps).extracting(p -> p.algorithm().id())
        .containsExactly("fixed-window", "sliding-window", "token-bucket", "gcra");
    assertThat(ps.get(0)).isEqualTo(Policy.fixedWindow("login", 5, Duration.ofMinutes(1)));
    assertThat(ps.get(2)).isEqualTo(Policy.tokenBucket("uploads", 20, 5, Duration.ofSeconds(1)));
    assertThat(ps.get(3)).isEqualTo(Policy.gcra("search", 2, Duration.ofSeconds(1), 10));
  }

  @Test void durationsInEveryForm() {
    assertThat(Durations.parse("w", "250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(Durations.parse("w", "90s")).isEqualTo(Duration.ofSeconds(90));
    assertThat(Durations.parse("w", "5m")).isEqualTo(Duration.ofMinutes(5));
    assertThat(Durations.parse("w", "2h")).isEqualTo(Duration.ofHours(2));
    assertThat(Durations.parse("w", "1d")).isEqualTo(Duration.ofDays(1));
    assertThat(Durations.parse("w", "1500us")).isEqualTo(Duration.ofNanos(1_500_000));
    assertThat(Durations.parse("w", "PT1M30S")).isEqualTo(Duration.ofSeconds(90));
    assertThat(Durations.format(90_000_000)).isEqualTo("90s");
    assertThat(Durations.format(3_600_000_000L)).isEqualTo("1h");
    assertThat(Durations.format(1_500)).isEqualTo("1500us");
  }

  @Test void mistakesNameTheEntryAndTheRule() {
    assertError("policies: []", "f: 'policies' must be a non-empty list");
    assertError("rules: []", "f: expected a top-level 'policies:' list");
    assertError("policies:\n  - name: a\n    algorithm: leaky\n",
        "f: policy #1 ('a'): unknown algorithm 'leaky'; use one of fixed-window, sliding-window, token-bucket, gcra, sliding-log");
    assertError("policies:\n  - name: a\n    algorithm: fixed-window\n    limit: 5\n    windw: 1s\n",
        "f: policy #1 ('a'): unknown parameter 'windw'; fixed-window takes limit, window");
    assertError("policies:\n  - name: a\n    algorithm: gcra\n    rate: 5\n    period: 1s\n",
        "f: policy #1 ('a'): 'burst' is missing");
    assertError("policies:\n  - name: a\n    algorithm: fixed-window\n    limit: 5\n    window: 60\n",
        "f: policy #1 ('a'): 'window' is 60 without a unit; write e.g. 60s or 60ms");
    assertError("policies:\n  - name: a\n    algorithm: fixed-window\n    limit: five\n    window: 1s\n",
        "f: policy #1 ('a'): 'limit' is \"five\"; it must be a whole number");
    assertError("policies:\n  - name: a\n    algorithm: fixed-window\n    limit: 0\n    window: 1s\n",
        "f: policy #1 ('a'): limit 0 is not positive; it must be at least 1");
    assertError("policies:\n  - name: a\n    algorithm: fixed-window\n    limit: 1\n    window: 1s\n"
            + "  - name: a\n    algorithm: gcra\n    rate: 1\n    period: 1s\n    burst: 1\n",
        "f: policy #2 repeats the name 'a'; every policy needs its own name (the name is part of every key's identity)");
    assertError("policies:\n  - name: bad name\n    algorithm: fixed-window\n    limit: 1\n    window: 1s\n",
        "f: policy #1 ('bad name'): policy name \"bad name\" is malformed; it must match [A-Za-z0-9][A-Za-z0-9._:-]{0,63}");
    assertThatThrownBy(() -> PolicyFile.parse("policies: [", "f")).hasMessageStartingWith("f is not valid YAML (line 1, column 12): ");
  }

  private static void assertError(String yaml, String message) {
    assertThatThrownBy(() -> PolicyFile.parse(yaml, "f")).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
  }
}

package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the core knows about each algorithm besides its math, in one place (issue 28, item 5). */
class AlgorithmKindTest {
  static final List<Algorithm> ONE_OF_EACH = List.of(
      new Algorithm.FixedWindow(5, 1_000_000), new Algorithm.SlidingWindow(5, 1_500_000),
      new Algorithm.TokenBucket(100, 3, 1_000_000), new Algorithm.Gcra(10, 1_000_000, 25),
      new Algorithm.SlidingLog(5, 1_000));

  @Test void everyAlgorithmHasExactlyOneKindAndItsNameParsesBack() {
    assertThat(AlgorithmKind.values()).hasSameSizeAs(Algorithm.class.getPermittedSubclasses());
    for (Algorithm a : ONE_OF_EACH) {
      AlgorithmKind k = AlgorithmKind.of(a);
      assertThat(a.id()).isEqualTo(k.id());
      assertThat(AlgorithmKind.parse(a.id())).isSameAs(k);
      assertThat(AlgorithmKind.find("s1|" + a.id() + "|", 3, 3 + a.id().length())).isSameAs(k);
    }
    assertThat(Arrays.stream(AlgorithmKind.values()).map(AlgorithmKind::id))
        .containsExactly("fixed-window", "sliding-window", "token-bucket", "gcra", "sliding-log");
  }

  @Test void anUnknownNameIsRefusedNamingItAndEveryAcceptedName() {
    assertThatThrownBy(() -> AlgorithmKind.parse("leaky-bucket")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("unknown algorithm 'leaky-bucket'; use one of fixed-window, sliding-window, token-bucket, gcra, sliding-log");
    assertThatThrownBy(() -> AlgorithmKind.parse("Fixed-Window")).hasMessageStartingWith("unknown algorithm 'Fixed-Window'");
    assertThatThrownBy(() -> AlgorithmKind.parse(null)).hasMessageStartingWith("unknown algorithm 'null'");
    assertThat(AlgorithmKind.find("gcrax", 0, 5)).isNull();
  }

  @Test void theParametersAreTheRecordsComponentsInOrderAndBuildItBack() {
    assertThat(AlgorithmKind.TOKEN_BUCKET.parameterNames()).isEqualTo("capacity, refill-tokens, refill-period");
    assertThat(AlgorithmKind.GCRA.parameterNames()).isEqualTo("rate, period, burst");
    assertThat(AlgorithmKind.SLIDING_LOG.parameterNames()).isEqualTo("limit, window");
    for (Algorithm a : ONE_OF_EACH) {
      AlgorithmKind k = AlgorithmKind.of(a);
      List<String> names = k.parameters().stream().map(AlgorithmKind.Parameter::name).toList();
      var components = a.getClass().getRecordComponents();
      assertThat(names).hasSameSizeAs(components);
      for (int i = 0; i < components.length; i++) { // refill-period is refillPeriodMicros
        assertThat(components[i].getName()).as(a.id()).startsWith(names.get(i).replace("-t", "T").replace("-p", "P"));
        assertThat(components[i].getName().endsWith("Micros")).isEqualTo(k.parameters().get(i).period());
      }
      Algorithm again = k.algorithm(name -> k.value(a, names.indexOf(name)),
          name -> Duration.ofNanos(1_000 * k.value(a, names.indexOf(name))));
      assertThat(again).isEqualTo(a);
    }
  }

  @Test void aRateReadsAsEachAlgorithmsOwnParameters() {
    Duration minute = Duration.ofMinutes(1);
    assertThat(AlgorithmKind.FIXED_WINDOW.perPeriod(10, minute, 99)).isEqualTo(new Algorithm.FixedWindow(10, 60_000_000));
    assertThat(AlgorithmKind.SLIDING_LOG.perPeriod(10, minute, 99)).isEqualTo(new Algorithm.SlidingLog(10, 60_000_000));
    assertThat(AlgorithmKind.TOKEN_BUCKET.perPeriod(10, minute, 30)).isEqualTo(new Algorithm.TokenBucket(30, 10, 60_000_000));
    assertThat(AlgorithmKind.GCRA.perPeriod(10, minute, 30)).isEqualTo(new Algorithm.Gcra(10, 60_000_000, 30));
    assertThat(Arrays.stream(AlgorithmKind.values()).filter(AlgorithmKind::hasBurst))
        .containsExactly(AlgorithmKind.TOKEN_BUCKET, AlgorithmKind.GCRA);
    assertThat(AlgorithmKind.withBurst()).isEqualTo("token-bucket and gcra");
  }

  @Test void aBadPeriodIsReportedAsThePolicyFactoriesReportIt() {
    assertThatThrownBy(() -> AlgorithmKind.TOKEN_BUCKET.perPeriod(1, Duration.ofNanos(10), 1))
        .hasMessage("refill period PT0.00000001S is under 1 ms; use at least Duration.ofMillis(1)");
    assertThatThrownBy(() -> Policy.tokenBucket("p", 1, 1, Duration.ofNanos(10)))
        .hasMessage("refill period PT0.00000001S is under 1 ms; use at least Duration.ofMillis(1)");
  }

  /** One computation of the span a quota covers, for the RateLimit-Policy header and a ticket's life. */
  @Test void theSpanIsTheWindowOrTheTimeToRefillTheBurstRoundedUp() {
    Map<Algorithm, Long> spans = Map.of(
        ONE_OF_EACH.get(0), 1_000_000L, ONE_OF_EACH.get(1), 1_500_000L,
        ONE_OF_EACH.get(2), 33_333_334L, // 100 tokens at 3 per second
        ONE_OF_EACH.get(3), 2_500_000L, // a burst of 25 at 10 per second
        ONE_OF_EACH.get(4), 1_000L);
    spans.forEach((a, span) -> assertThat(AlgorithmKind.quotaMicros(a)).as(a.id()).isEqualTo(span));
    long max = Checks.MAX_EXACT;
    assertThat(AlgorithmKind.quotaMicros(new Algorithm.TokenBucket(max / 1_000, max, 1_000))).isEqualTo(1);
    assertThat(AlgorithmKind.quotaMicros(new Algorithm.FixedWindow(max, Checks.MAX_WINDOW_MICROS))).isEqualTo(Checks.MAX_WINDOW_MICROS);
  }

  @Test void aBackendOfFixedSizeStateRefusesTheSlidingLogWithOneMessage() {
    for (Algorithm a : ONE_OF_EACH) {
      Policy p = new Policy("p", a);
      if (a instanceof Algorithm.SlidingLog) {
        assertThatThrownBy(() -> AlgorithmKind.requireFixedSize(p, "PostgreSQL")).isInstanceOf(IllegalArgumentException.class)
            .hasMessage("policy 'p' uses sliding-log, whose state grows with its limit; PostgreSQL keeps a fixed-size state "
                + "per key and runs fixed-window, sliding-window, token-bucket and gcra: use one of those, or sliding-log "
                + "on MemoryRateLimiter or Redis");
      } else {
        assertThat(AlgorithmKind.requireFixedSize(p, "PostgreSQL")).isSameAs(p);
      }
    }
  }
}

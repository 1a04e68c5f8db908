package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiters;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShadowRateLimiterTest {
  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);

  @Test
  void aShadowLimitNeverRefusesButReportsWhatItWouldHaveRefused() {
    var candidate = Legs.memory(Policy.fixedWindow("new-limit", 2, Duration.ofMinutes(1)), ticker);
    List<Decision> wouldRefuse = new ArrayList<>();
    ShadowRateLimiter shadow = RateLimiters.shadow(candidate, (d, key) -> wouldRefuse.add(d));

    for (int i = 0; i < 5; i++) {
      Decision d = shadow.tryAcquire("u");
      assertThat(d.allowed()).isTrue();
      assertThat(d.ticket().isPresent()).as("a ticket only when the candidate counted").isEqualTo(i < 2);
    }
    assertThat(wouldRefuse).hasSize(3).allSatisfy(d -> {
      assertThat(d.allowed()).isFalse();
      assertThat(d.reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(d.policy().name()).isEqualTo("new-limit");
    });
    assertThat(shadow.evaluated()).isEqualTo(5);
    assertThat(shadow.wouldRefuse()).isEqualTo(3);
    assertThat(shadow.wouldRefuseRate()).isEqualTo(0.6);
    assertThat(shadow.peek("u").allowed()).isTrue();
  }

  @Test
  void besideAnEnforcingLimiterTheEnforcingOneDecides() {
    var enforcing = Legs.memory(Policy.fixedWindow("current", 3, Duration.ofMinutes(1)), ticker);
    var candidate = Legs.memory(Policy.fixedWindow("proposed", 1, Duration.ofMinutes(1)), ticker);
    List<String> keys = new ArrayList<>();
    ShadowRateLimiter shadow = ShadowRateLimiter.beside(enforcing, candidate, (d, key) -> keys.add(key), true);

    assertThat(shadow.tryAcquire("u").allowed()).isTrue();
    assertThat(shadow.tryAcquire("u").allowed()).isTrue();
    assertThat(shadow.tryAcquire("u").allowed()).isTrue();
    assertThat(shadow.tryAcquire("u").allowed()).as("the enforcing limit still refuses").isFalse();
    assertThat(shadow.policy().name()).isEqualTo("current");
    assertThat(shadow.wouldRefuse()).isEqualTo(3);
    assertThat(keys).containsOnly("u");
  }

  @Test
  void aThrowingListenerOrCandidateNeverReachesTheCaller() {
    var candidate = Legs.memory(Policy.fixedWindow("c", 1, Duration.ofMinutes(1)), ticker);
    ShadowRateLimiter shadow = RateLimiters.shadow(candidate, (d, key) -> {
      throw new IllegalStateException("listener bug");
    });
    shadow.tryAcquire("u");
    assertThat(shadow.tryAcquire("u").allowed()).isTrue();

    ShadowRateLimiter broken = RateLimiters.shadow(new Legs.Throwing(Policy.fixedWindow("b", 1, Duration.ofMinutes(1)),
        new IllegalStateException("candidate bug")), (d, key) -> {});
    assertThat(broken.tryAcquire("u").allowed()).isTrue();
    assertThat(broken.candidateErrors()).isEqualTo(1);
  }
}

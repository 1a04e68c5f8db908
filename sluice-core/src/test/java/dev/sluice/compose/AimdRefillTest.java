package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Policy;
import java.time.Duration;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class AimdRefillTest {

  @Property(tries = 300)
  void everyProposalIsBoundedAndMovesInTheSignalsDirection(
      @ForAll @LongRange(min = 1, max = 1000) long min,
      @ForAll @LongRange(min = 0, max = 1000) long span,
      @ForAll @LongRange(min = 1, max = 50) long maxStep,
      @ForAll @LongRange(min = 1, max = 20) long increase,
      @ForAll @DoubleRange(min = 0.05, max = 0.95) double factor,
      @ForAll @Size(max = 200) List<Boolean> signals) {
    long max = min + span;
    AimdRefill aimd = AimdRefill.builder(max, min, max).maxStep(maxStep).increase(increase).decreaseFactor(factor).build();
    for (boolean throttled : signals) {
      AimdRefill.Proposal p = aimd.propose(throttled);
      assertThat(p.value()).isBetween(min, max);
      assertThat(Math.abs(p.value() - p.previous())).isLessThanOrEqualTo(maxStep);
      assertThat(p.changed()).isEqualTo(p.value() != p.previous());
      if (throttled) {
        assertThat(p.value()).isLessThanOrEqualTo(p.previous());
        assertThat(p.value() < p.previous() || p.previous() == min).as("a throttle signal always backs off unless at min").isTrue();
      } else {
        assertThat(p.value()).isGreaterThanOrEqualTo(p.previous());
      }
      assertThat(aimd.value()).isEqualTo(p.value());
    }
  }

  @Test
  void halvesOnThrottleAndClimbsByOneOtherwise() {
    AimdRefill aimd = AimdRefill.builder(20, 1, 20).build();
    assertThat(aimd.propose(true).value()).isEqualTo(10);
    assertThat(aimd.propose(true).value()).isEqualTo(5);
    assertThat(aimd.propose(false).value()).isEqualTo(6);
    AimdRefill bounded = AimdRefill.builder(20, 1, 20).maxStep(2).build();
    assertThat(bounded.propose(true).value()).isEqualTo(18);
  }

  @Test
  void proposesAPolicyAndNeverMutatesOne() {
    Policy bucket = Policy.tokenBucket("upstream", 100, 20, Duration.ofSeconds(1));
    AimdRefill.Proposal p = AimdRefill.builder(20, 1, 20).build().propose(true);
    Policy proposed = p.applyTo(bucket);
    assertThat(proposed).isEqualTo(Policy.tokenBucket("upstream", 100, 10, Duration.ofSeconds(1)));
    assertThat(bucket).isEqualTo(Policy.tokenBucket("upstream", 100, 20, Duration.ofSeconds(1)));
    assertThat(p.applyTo(Policy.gcra("g", 20, Duration.ofSeconds(1), 5))).isEqualTo(Policy.gcra("g", 10, Duration.ofSeconds(1), 5));
    assertThatThrownBy(() -> p.applyTo(Policy.fixedWindow("f", 5, Duration.ofSeconds(1))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has no refill rate");
  }

  @Test
  void badBoundsFailFast() {
    assertThatThrownBy(() -> AimdRefill.builder(5, 10, 20)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("initial 5 is outside [10, 20]; start within the bounds");
    assertThatThrownBy(() -> AimdRefill.builder(5, 30, 20)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("min 30 exceeds max 20; min must be at most max");
    assertThatThrownBy(() -> AimdRefill.builder(5, 1, 20).decreaseFactor(1.0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not strictly between 0 and 1");
    assertThatThrownBy(() -> AimdRefill.builder(5, 0, 20)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("min 0 is not positive; it must be at least 1");
  }
}

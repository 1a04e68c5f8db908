package dev.sluice.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.Decision;
import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.testing.ManualTicker;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Per-key overrides (issue 31, {@link KeyOverrides}): an override lowers a limit mid-window and
 * refuses at once, raises it and admits more, and clearing it returns the key to the caller's policy
 * with the count kept; an override with another algorithm under the same name starts afresh. Every
 * decision equals the reference model's under the policy that decided it. Part of
 * {@link RateLimiterContract}; a backend without overrides says so in {@link #overridesKeys()}.
 */
public abstract sealed class OverrideCases extends PipelineCases permits RateLimiterContract {

  OverrideCases() {}

  /** Whether the backend keeps per-key overrides ({@link KeyOverrides}); every Sluice store does. */
  protected boolean overridesKeys() {
    return true;
  }

  private KeyOverrides overrides(RateLimiter l) {
    assumeTrue(overridesKeys(), "backend keeps no per-key overrides");
    assertThat(l).as("a backend that overrides keys implements KeyOverrides").isInstanceOf(KeyOverrides.class);
    return (KeyOverrides) l;
  }

  /** The same name and algorithm as {@code p}, with the kit's numbers for {@code limit}. */
  private static Policy renumbered(Policy p, long limit) {
    return policy(p.name(), AlgorithmKind.of(p.algorithm()).id(), limit);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void anOverrideLowersTheLimitMidWindowAndRefusesAtOnce(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    Policy low = renumbered(p, 4);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    KeyOverrides o = overrides(l);
    ReferenceLimiter model = new ReferenceLimiter();
    long now = ticker.nowMicros();
    assertThat(l.tryAcquire("acct", 6)).isEqualTo(model.acquire(p, "acct", 6, now));
    o.override("acct", low);
    assertThat(o.overrideOf("acct", p)).contains(low);
    Decision d = l.tryAcquire("acct", 1);
    assertThat(d).as("over the lowered limit: refused at the next hit").isEqualTo(model.acquire(low, "acct", 1, now));
    if (AlgorithmKind.parse(algorithm).hasBurst()) {
      assertThat(d.remaining()).as("a bucket's tokens capped at the lowered capacity").isLessThan(4);
    } else {
      assertThat(d.allowed()).as("6 counted, over the lowered 4").isFalse();
    }
    assertThat(d.policy()).as("the decision reports the policy that decided").isEqualTo(low);
    assertThat(d.limit()).isEqualTo(4);
    assertThat(l.tryAcquire("other", 1)).as("another key keeps the caller's policy").isEqualTo(model.acquire(p, "other", 1, now));
    assertThat(l.peek("acct")).isEqualTo(model.peek(low, "acct", now));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void anOverrideRaisesTheLimitAndAdmitsMore(String algorithm) {
    Policy p = policy(alg(algorithm), 5);
    Policy high = renumbered(p, 12);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    KeyOverrides o = overrides(l);
    ReferenceLimiter model = new ReferenceLimiter();
    long now = ticker.nowMicros();
    for (int i = 0; i < 6; i++) {
      assertThat(l.tryAcquire("acct", 1)).as("acquire %d", i).isEqualTo(model.acquire(p, "acct", 1, now));
    }
    assertThat(l.tryAcquire("acct", 1).allowed()).as("at the caller's limit").isFalse();
    model.acquire(p, "acct", 1, now);
    o.override("acct", high);
    for (int i = 0; i < 8; i++) {
      Decision want = model.acquire(high, "acct", 1, now);
      assertThat(l.tryAcquire("acct", 1)).as("acquire %d under the raised limit", i).isEqualTo(want);
    }
    assertThat(model.peek(high, "acct", now).remaining()).as("the kit's own check: the raise admitted more").isLessThan(12);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void clearingAnOverrideReturnsToTheCallersPolicyWithTheCountKept(String algorithm) {
    Policy p = policy(alg(algorithm), 6);
    Policy high = renumbered(p, 12);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    KeyOverrides o = overrides(l);
    ReferenceLimiter model = new ReferenceLimiter();
    long now = ticker.nowMicros();
    o.override("acct", high);
    assertThat(l.tryAcquire("acct", 4)).isEqualTo(model.acquire(high, "acct", 4, now));
    assertThat(l.tryAcquire("acct", 4)).isEqualTo(model.acquire(high, "acct", 4, now));
    assertThat(o.clearOverride("acct", p)).as("there was one").isTrue();
    assertThat(o.overrideOf("acct", p)).isEmpty();
    Decision d = l.tryAcquire("acct", 1);
    assertThat(d).as("back under the caller's policy, the count kept").isEqualTo(model.acquire(p, "acct", 1, now));
    if (AlgorithmKind.parse(algorithm).hasBurst()) {
      assertThat(d.remaining()).as("a bucket's tokens capped at the caller's capacity").isLessThan(6);
    } else {
      assertThat(d.allowed()).as("8 counted, over the caller's 6").isFalse();
    }
    assertThat(d.policy()).isEqualTo(p);
    assertThat(o.clearOverride("acct", p)).as("cleared already").isFalse();
    ticker.advanceMicros(windowMicros(p) * 2);
    assertThat(l.tryAcquire("acct", 1)).isEqualTo(model.acquire(p, "acct", 1, ticker.nowMicros()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void anOverrideWithAnotherAlgorithmStartsAfresh(String algorithm) {
    Policy p = policy(alg(algorithm), 5);
    AlgorithmKind other = AlgorithmKind.parse(algorithm) == AlgorithmKind.FIXED_WINDOW ? AlgorithmKind.TOKEN_BUCKET : AlgorithmKind.FIXED_WINDOW;
    Policy switched = policy(p.name(), other.id(), 3);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    assumeTrue(supports(switched.algorithm()), "backend does not implement " + other.id());
    KeyOverrides o = overrides(l);
    ReferenceLimiter model = new ReferenceLimiter();
    long now = ticker.nowMicros();
    assertThat(l.tryAcquire("acct", 5)).isEqualTo(model.acquire(p, "acct", 5, now));
    o.override("acct", switched);
    assertThat(o.overrideOf("acct", p)).contains(switched);
    Decision d = l.tryAcquire("acct", 1);
    assertThat(d).as("a state of another shape: afresh").isEqualTo(model.acquire(switched, "acct", 1, now));
    assertThat(d.allowed()).isTrue();
    assertThat(d.policy()).isEqualTo(switched);
    assertThat(l.tryAcquire("acct", 1, p)).as("whatever policy the caller passes").isEqualTo(model.acquire(switched, "acct", 1, now));
    assertThat(o.clearOverride("acct", p)).isTrue();
    assertThat(l.tryAcquire("acct", 1)).as("cleared: the caller's algorithm again, afresh").isEqualTo(model.acquire(p, "acct", 1, now));
  }

  /** A refund of a ticket issued under an override gives its permits back to the overridden budget. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aTicketIssuedUnderAnOverrideRefundsToIt(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    Policy low = renumbered(p, 4);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    KeyOverrides o = overrides(l);
    o.override("acct", low);
    Decision d = l.tryAcquire("acct", 3);
    assertThat(d.allowed()).isTrue();
    assertThat(d.ticket().orElseThrow().policy()).isEqualTo(low);
    assertThat(l.refund(d.ticket().get())).isEqualTo(dev.sluice.Refund.APPLIED);
    assertThat(l.peek("acct").remaining()).isEqualTo(4);
  }

  /** A reset forgets the count and keeps the override: configuration, not state. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  void aResetKeepsTheOverride(String algorithm) {
    Policy p = policy(alg(algorithm), 10);
    Policy low = renumbered(p, 4);
    ManualTicker ticker = newTicker();
    RateLimiter l = limiter(p, ticker);
    KeyOverrides o = overrides(l);
    o.override("acct", low);
    assertThat(l.tryAcquire("acct", 4).allowed()).isTrue();
    l.reset("acct", p);
    assertThat(o.overrideOf("acct", p)).contains(low);
    Decision d = l.tryAcquire("acct", 1);
    assertThat(d).isEqualTo(new ReferenceLimiter().acquire(low, "acct", 1, ticker.nowMicros()));
  }

  @Test
  void badOverridesAreRefusedWithTheirRuleAndChangeNothing() {
    Policy p = policy(alg("fixed-window"), 5);
    RateLimiter l = limiter(p, newTicker());
    KeyOverrides o = overrides(l);
    assertThatThrownBy(() -> o.override("acct", null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("policy");
    assertThatThrownBy(() -> o.override(null, p)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
    assertThatThrownBy(() -> o.override("", p)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("key");
    assertThat(o.overrideOf("acct", p)).isEqualTo(Optional.empty());
    assertThat(l.tryAcquire("acct", 5).allowed()).isTrue();
  }
}

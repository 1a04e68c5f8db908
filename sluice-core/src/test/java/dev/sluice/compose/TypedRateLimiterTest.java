package dev.sluice.compose;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiters;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TypedRateLimiterTest {
  final ManualTicker ticker = ManualTicker.at(CompositionTest.T0);
  final MemoryRateLimiter memory = Legs.memory(Policy.fixedWindow("default", 1, Duration.ofSeconds(1)), ticker);

  record Attempt(String realm, String userId, long max, Duration window) {}

  TypedRateLimiter<Attempt> account() {
    return RateLimiters.<Attempt>typed("login.account", memory)
        .key(a -> a.realm() + ":" + a.userId())
        .limit(Attempt::max)
        .window(Attempt::window)
        .build();
  }

  @Test
  void eachRealmGetsItsConfiguredMaximum() {
    TypedRateLimiter<Attempt> account = account();
    Attempt strict = new Attempt("bank", "ann", 2, Duration.ofMinutes(5));
    Attempt lax = new Attempt("forum", "ann", 4, Duration.ofMinutes(5));

    assertThat(account.tryAcquire(strict).allowed()).isTrue();
    assertThat(account.tryAcquire(strict).allowed()).isTrue();
    Decision third = account.tryAcquire(strict);
    assertThat(third.allowed()).isFalse();
    assertThat(third.limit()).isEqualTo(2);
    assertThat(third.policy().name()).isEqualTo("login.account");
    assertThat(third.retryAfter()).isEqualTo(Duration.ofMinutes(5));
    for (int i = 0; i < 4; i++) {
      assertThat(account.tryAcquire(lax).allowed()).as("another realm, another key and limit").isTrue();
    }
    assertThat(account.tryAcquire(lax).allowed()).isFalse();
    assertThat(account.policyFor(strict)).isSameAs(account.policyFor(strict));
    assertThat(account.keyOf(lax)).isEqualTo("forum:ann");
  }

  @Test
  void aSuccessfulLoginIsRefunded() {
    TypedRateLimiter<Attempt> account = account();
    Attempt a = new Attempt("bank", "bob", 1, Duration.ofMinutes(1));
    Decision d = account.tryAcquire(a);
    assertThat(account.refund(d.ticket().orElseThrow())).isEqualTo(Refund.APPLIED);
    assertThat(account.tryAcquire(a).allowed()).isTrue();
    assertThat(account.peek(a).allowed()).isFalse();
    account.reset(a);
    assertThat(account.peek(a).allowed()).isTrue();
  }

  @Test
  void stringInputsNeedNoKeyFunction() {
    TypedRateLimiter<String> perIp = TypedRateLimiter.<String>builder("ip", memory).limit(1).window(Duration.ofSeconds(1)).build();
    assertThat(perIp.tryAcquire("10.0.0.1").allowed()).isTrue();
    assertThat(perIp.tryAcquire("10.0.0.1").allowed()).isFalse();
    assertThat(perIp.tryAcquire("10.0.0.2").allowed()).isTrue();
  }

  @Test
  void shapesMapToTheirAlgorithms() {
    TypedRateLimiter<String> bucket = TypedRateLimiter.<String>builder("b", memory).limit(3).window(Duration.ofSeconds(3))
        .shape(TypedRateLimiter.Shape.TOKEN_BUCKET).build();
    assertThat(bucket.policyFor("x")).isEqualTo(Policy.tokenBucket("b", 3, 3, Duration.ofSeconds(3)));
    TypedRateLimiter<String> sliding = TypedRateLimiter.<String>builder("s", memory).limit(3).window(Duration.ofSeconds(3))
        .shape(TypedRateLimiter.Shape.SLIDING_WINDOW).build();
    assertThat(sliding.policyFor("x")).isEqualTo(Policy.slidingWindow("s", 3, Duration.ofSeconds(3)));
  }

  @Test
  void aMisconfigurationThrowsInsteadOfDeciding() {
    TypedRateLimiter<Attempt> account = account();
    assertThatThrownBy(() -> account.tryAcquire(new Attempt("bank", "ann", 0, Duration.ofMinutes(1))))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("limit 0 is not positive; it must be at least 1");
    assertThatThrownBy(() -> account.tryAcquire(new Attempt("bank", "ann", -3, Duration.ofMinutes(1))))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("limit -3 is not positive; it must be at least 1");
    assertThatThrownBy(() -> account.tryAcquire(new Attempt("bank", "ann", 5, Duration.ofNanos(500_000))))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("window PT0.0005S is under 1 ms; use at least Duration.ofMillis(1)");
    assertThatThrownBy(() -> account.tryAcquire(new Attempt("bank", "ann", 5, null)))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("window is null; give a duration of at least 1 ms");
    assertThatThrownBy(() -> account.tryAcquire(null))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("input is null");
    assertThatThrownBy(() -> account.tryAcquire(new Attempt("bank", "ann", 5, Duration.ofMinutes(1)), 6))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("permits 6 exceeds 5, the most policy 'login.account'");
    TypedRateLimiter<Attempt> blankKeys = RateLimiters.<Attempt>typed("x", memory).key(a -> " ").limit(1).window(Duration.ofSeconds(1)).build();
    assertThatThrownBy(() -> blankKeys.tryAcquire(new Attempt("", "", 1, Duration.ofSeconds(1))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is blank");
    TypedRateLimiter<Attempt> noKey = RateLimiters.<Attempt>typed("x", memory).limit(1).window(Duration.ofSeconds(1)).build();
    assertThatThrownBy(() -> noKey.tryAcquire(new Attempt("", "", 1, Duration.ofSeconds(1))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("has no key function; give key(input -> ...) to the builder, or pass String inputs");
    assertThatThrownBy(() -> RateLimiters.typed("bad name!", memory)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is malformed");
    assertThatThrownBy(() -> RateLimiters.typed("x", memory).limit(1).build()).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has no window");
    assertThatThrownBy(() -> RateLimiters.typed("x", memory).limit(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("limit 0 is not positive; it must be at least 1");
  }
}

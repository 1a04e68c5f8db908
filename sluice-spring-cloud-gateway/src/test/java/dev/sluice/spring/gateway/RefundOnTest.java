package dev.sluice.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** A route's refund-on words: the kernel's RefundRule for failure and success, statuses and classes besides. */
class RefundOnTest {
  @Test void theWordsAreTheKernelsRuleAndStatusesAddToIt() {
    RefundOn failure = RefundOn.parse("x", List.of("failure"));
    assertThat(failure.refunds(false, 503)).isTrue();
    assertThat(failure.refunds(true, -1)).as("the downstream call failed").isTrue();
    assertThat(failure.refunds(false, 404)).isFalse();
    RefundOn success = RefundOn.parse("x", List.of("SUCCESS"));
    assertThat(success.refunds(false, 200)).isTrue();
    assertThat(success.refunds(false, 500)).isFalse();
    assertThat(success.refunds(true, -1)).isFalse();
    RefundOn some = RefundOn.parse("x", List.of("4xx", " 503 "));
    assertThat(some.refunds(false, 404)).isTrue();
    assertThat(some.refunds(false, 499)).isTrue();
    assertThat(some.refunds(false, 503)).isTrue();
    assertThat(some.refunds(false, 500)).isFalse();
    assertThat(some.refunds(true, -1)).as("a throw is no status").isFalse();
    assertThat(RefundOn.parse("x", List.of()).never()).isTrue();
    assertThat(some.never()).isFalse();
  }

  @Test void aWordThatIsNoneIsRefusedAtStart() {
    assertThatThrownBy(() -> RefundOn.parse("Sluice filter [a]: refund-on", List.of("errors")))
        .hasMessage("Sluice filter [a]: refund-on 'errors' is unknown; use failure, success, a status (503) or a class (5xx)");
    assertThatThrownBy(() -> RefundOn.parse("Sluice filter [a]: refund-on", List.of("failure", "success")))
        .hasMessage("Sluice filter [a]: refund-on names both failure and success: then nothing would be charged");
  }
}

package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Which finished requests give their permits back, for every front end. */
class RefundRuleTest {
  @Test void onFailureRefundsAThrowAnd5xxOnly() {
    assertThat(RefundRule.ON_FAILURE.refunds(true, -1)).isTrue();
    assertThat(RefundRule.ON_FAILURE.refunds(false, 500)).isTrue();
    assertThat(RefundRule.ON_FAILURE.refunds(false, 503)).isTrue();
    assertThat(RefundRule.ON_FAILURE.refunds(false, 200)).isFalse();
    assertThat(RefundRule.ON_FAILURE.refunds(false, 404)).isFalse();
    assertThat(RefundRule.ON_FAILURE.refunds(false, 499)).isFalse();
  }

  @Test void onSuccessRefundsAKnownStatusBelow400Only() {
    assertThat(RefundRule.ON_SUCCESS.refunds(false, 200)).isTrue();
    assertThat(RefundRule.ON_SUCCESS.refunds(false, 399)).isTrue();
    assertThat(RefundRule.ON_SUCCESS.refunds(false, 400)).isFalse();
    assertThat(RefundRule.ON_SUCCESS.refunds(false, 500)).isFalse();
    assertThat(RefundRule.ON_SUCCESS.refunds(false, -1)).as("unknown status").isFalse();
    assertThat(RefundRule.ON_SUCCESS.refunds(false, 0)).as("unknown status").isFalse();
    assertThat(RefundRule.ON_SUCCESS.refunds(true, 200)).as("a throw is no success").isFalse();
  }

  @Test void neverRefunds() {
    for (int status : new int[] {-1, 200, 404, 500}) {
      assertThat(RefundRule.NEVER.refunds(false, status)).isFalse();
      assertThat(RefundRule.NEVER.refunds(true, status)).isFalse();
    }
  }

  @Test void theOptionsChooseTheRuleAndCannotBothBeOn() {
    assertThat(RefundRule.of(false, false, "both")).isEqualTo(RefundRule.NEVER);
    assertThat(RefundRule.of(true, false, "both")).isEqualTo(RefundRule.ON_FAILURE);
    assertThat(RefundRule.of(false, true, "both")).isEqualTo(RefundRule.ON_SUCCESS);
    assertThatThrownBy(() -> RefundRule.of(true, true, "skip-on-failure and skip-on-success are both set"))
        .isInstanceOf(IllegalStateException.class).hasMessage("skip-on-failure and skip-on-success are both set");
  }
}

package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/** One word set for every front end: the service's old words and the Spring starter's both parse. */
class HeaderFamilyTest {
  @Test void everyWordOfBothFrontEndsParsesInAnyCase() {
    assertThat(HeaderFamily.parse("--envoy-headers", "ietf")).isEqualTo(HeaderFamily.IETF);
    assertThat(HeaderFamily.parse("--envoy-headers", "IETF")).isEqualTo(HeaderFamily.IETF);
    assertThat(HeaderFamily.parse("--envoy-headers", "legacy")).isEqualTo(HeaderFamily.LEGACY);
    assertThat(HeaderFamily.parse("--envoy-headers", "LEGACY")).isEqualTo(HeaderFamily.LEGACY);
    assertThat(HeaderFamily.parse("--envoy-headers", "all")).isEqualTo(HeaderFamily.ALL);
    assertThat(HeaderFamily.parse("--envoy-headers", " None ")).isEqualTo(HeaderFamily.NONE);
    for (HeaderFamily f : HeaderFamily.values()) {
      assertThat(HeaderFamily.parse("x", f.word())).isEqualTo(f);
    }
  }

  @Test void aWrongWordIsRefusedWithEveryWord() {
    assertThatThrownBy(() -> HeaderFamily.parse("--envoy-headers", "both"))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("--envoy-headers 'both' is unknown; use ietf, legacy, all or none");
    assertThatThrownBy(() -> HeaderFamily.parse("sluice.headers", null)).hasMessage("sluice.headers is not set; use ietf, legacy, all or none");
  }

  @Test void aListIsTheUnionOfItsFamilies() {
    assertThat(HeaderFamily.union(List.of(HeaderFamily.IETF, HeaderFamily.LEGACY))).isEqualTo(HeaderFamily.ALL);
    assertThat(HeaderFamily.union(List.of(HeaderFamily.IETF))).isEqualTo(HeaderFamily.IETF);
    assertThat(HeaderFamily.union(List.of(HeaderFamily.NONE, HeaderFamily.LEGACY))).isEqualTo(HeaderFamily.LEGACY);
    assertThat(HeaderFamily.union(List.of())).isEqualTo(HeaderFamily.NONE);
    assertThat(HeaderFamily.ALL.ietf()).isTrue();
    assertThat(HeaderFamily.ALL.legacy()).isTrue();
    assertThat(HeaderFamily.NONE.ietf()).isFalse();
  }
}

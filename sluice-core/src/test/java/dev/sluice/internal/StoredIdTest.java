package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class StoredIdTest {
  @Test void aStandInResolvesToTheIdItStandsFor() {
    String id = StoredId.key("login", "k".repeat(50_000));
    assertThat(StoredId.key("login", StoredId.standIn(id))).isEqualTo(id);
    assertThat(StoredId.key("login", "alice")).isNotEqualTo(StoredId.key("login", "alice2"));
  }

  @Test void noCallersKeyCanTakeTheStandInForm() {
    String standIn = StoredId.standIn(StoredId.key("login", "victim"));
    assertThatThrownBy(() -> Checks.key(standIn)).hasMessageContaining("unpaired UTF-16 surrogate at index 0");
    assertThatThrownBy(() -> StoredId.standIn("not-an-id")).hasMessage("key id not-an-id is not 64 lowercase hex characters (a StoredId)");
  }
}

package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Base64;
import org.junit.jupiter.api.Test;

/** Shared ticket keys: parsing with exact messages, and rotation (the first key signs, every key verifies). */
class TicketKeysTest {
  private static final String A = Base64.getEncoder().encodeToString("a".repeat(32).getBytes());
  private static final String B = Base64.getEncoder().encodeToString("b".repeat(32).getBytes());

  @Test void aTicketSignedWithTheOldKeyVerifiesWhileTheNewOneSigns() {
    TicketCodec before = new TicketCodec(TicketKeys.parse("2024-01:" + A, "test"), false);
    TicketCodec during = new TicketCodec(TicketKeys.parse("2024-06:" + B + "\n2024-01:" + A, "test"), false);
    TicketCodec after = new TicketCodec(TicketKeys.parse("2024-06:" + B, "test"), false);
    String old = before.encode("login", "alice", 2, 7, 9, "0123456789abcdef0123456789abcdef");
    assertThat(during.decode(old).key()).isEqualTo("alice");
    String fresh = during.encode("login", "bob", 1, 7, 9, "fedcba9876543210fedcba9876543210");
    assertThat(after.decode(fresh).permits()).isEqualTo(1);
    assertThatThrownBy(() -> after.decode(old)).hasMessage("ticket signature does not verify: the ticket was altered, or was signed"
        + " with a key this server does not hold (its keys are 2024-06)");
    assertThatThrownBy(() -> new TicketCodec().decode(fresh)).hasMessageEndingWith("(no --ticket-keys: tickets refund only at the"
        + " process that issued them, and do not survive a restart)");
  }

  @Test void badKeysAreRefusedNamingTheEntryAndTheRule() {
    assertThatThrownBy(() -> TicketKeys.parse("nocolon", "SLUICE_TICKET_KEYS"))
        .hasMessage("SLUICE_TICKET_KEYS, entry 1: a key is ID:BASE64 with an id of [A-Za-z0-9._-]{1,32}; got no ':'");
    assertThatThrownBy(() -> TicketKeys.parse("k1:" + A + ",k 2:" + B, "x"))
        .hasMessage("x, entry 2: a key is ID:BASE64 with an id of [A-Za-z0-9._-]{1,32}; got id 'k 2'");
    assertThatThrownBy(() -> TicketKeys.parse("k1:c2hvcnQ=", "x"))
        .hasMessage("x, key 'k1': the secret is 5 bytes; give at least 32 random bytes, e.g. head -c 32 /dev/urandom | base64");
    assertThatThrownBy(() -> TicketKeys.parse("k1:" + A + "\nk1:" + B, "x")).hasMessage("x: key id 'k1' appears twice; each key needs its own id");
    assertThatThrownBy(() -> TicketKeys.parse("# nothing\n\n", "x")).hasMessage("x holds no key; write one ID:BASE64 per line");
    assertThatThrownBy(() -> TicketKeys.parse("k1:***", "x")).hasMessageStartingWith("x, key 'k1': the secret is not base64");
  }
}

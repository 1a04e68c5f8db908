package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, finding 4: the decoder ignored a last character's unused bits and accepted a trailing
 * {@code =}, so one ticket verified under up to eight spellings, and the spent set, keyed by the
 * text, let each refund again. Every spelling but the canonical one is now malformed, and a ticket's
 * claims carry its id, which keys every spent record.
 */
class TicketCodecTest {
  private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  private static final String ID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

  @Test
  void aValidTicketDecodesToItsClaimsAndItsId() {
    TicketCodec codec = new TicketCodec();
    TicketCodec.Claims c = codec.decode(codec.encode("login", "alice", 3, 7, 9, ID));
    assertThat(c.policy()).isEqualTo("login");
    assertThat(c.key()).isEqualTo("alice");
    assertThat(c.permits()).isEqualTo(3);
    assertThat(c.stamp()).isEqualTo(7);
    assertThat(c.issuedAtMicros()).isEqualTo(9);
    assertThat(c.ticketId()).isEqualTo(ID);
  }

  @Test
  void everyNonCanonicalSpellingOfAValidTicketIsRefusedAsMalformed() {
    TicketCodec codec = new TicketCodec();
    int tried = 0;
    // keys of several lengths, so that the payload's last character carries 2 or 4 unused bits
    for (String key : List.of("alice", "alice1", "alice12")) {
      String ticket = codec.encode("login", key, 3, 7, 9, ID);
      assertThat(codec.decode(ticket).ticketId()).isEqualTo(ID);
      int dot = ticket.indexOf('.');
      for (String spelling : otherSpellings(ticket, dot)) {
        assertThatThrownBy(() -> codec.decode(spelling)).as(spelling)
            .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("ticket is malformed");
        tried++;
      }
    }
    assertThat(tried).as("spellings tried").isGreaterThanOrEqualTo(3 * (3 + 2 + 2 + 1));
  }

  /** The ticket with its payload (before {@code dot}) or its signature re-spelled: other unused bits, or padding. */
  private static List<String> otherSpellings(String ticket, int dot) {
    List<String> out = new ArrayList<>();
    for (int[] part : new int[][] {{0, dot}, {dot + 1, ticket.length()}}) {
      String text = ticket.substring(part[0], part[1]);
      int unusedBits = (text.length() % 4) == 2 ? 4 : (text.length() % 4) == 3 ? 2 : 0;
      int last = ALPHABET.indexOf(text.charAt(text.length() - 1));
      for (int low = 1; low < (1 << unusedBits); low++) {
        String variant = text.substring(0, text.length() - 1) + ALPHABET.charAt(last ^ low);
        out.add(ticket.substring(0, part[0]) + variant + ticket.substring(part[1]));
      }
      String padded = text + "=".repeat((4 - text.length() % 4) % 4);
      if (!padded.equals(text)) {
        out.add(ticket.substring(0, part[0]) + padded + ticket.substring(part[1]));
      }
      out.add(ticket.substring(0, part[0]) + text + "=" + ticket.substring(part[1]));
    }
    return out;
  }
}

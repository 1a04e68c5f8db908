package dev.sluice.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Chars;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

/**
 * Issue 27, finding 3: composed keys are an injective encoding. Distinct lists of parts (sources,
 * names, values, shared patterns) never give one key, over an alphabet made of the separators
 * themselves, where an unescaped join ({@code user:alice|route:GET /a} from two ways of splitting)
 * collides at once.
 */
class KeysPropertyTest {
  /** Sources a part may have: the front ends' own, and Envoy's arbitrary descriptor keys, separators included. */
  static final String[] SOURCES = {Keys.IP, Keys.USER, Keys.VALUE, Keys.HEADER, "a", "a:b", "a|b", "a~", "a\\", ""};
  static final char[] ALPHABET = {'a', ':', '|', '\\', '~', ' '};

  /** One part of a key, as the front ends build it. */
  record Part(String source, String name, String value, boolean shared) {
    String encode() {
      if (name != null) {
        return Keys.key(source, name, value);
      }
      return shared ? Keys.sharedPart(source, value) : Keys.part(source, value);
    }
  }

  @Property(tries = 500)
  void splitReadsBackEveryListJoinWrote(
      @ForAll @Size(min = 1, max = 5) List<@StringLength(max = 6) @Chars({'a', ':', '|', '\\', '~'}) String> elements) {
    assertThat(Keys.split(Keys.join(elements))).isEqualTo(elements);
  }

  @Property(tries = 50)
  void distinctListsOfPartsNeverGiveOneKey(@ForAll long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    Map<String, List<Part>> seen = new HashMap<>();
    for (int i = 0; i < 4_000; i++) {
      List<Part> parts = new ArrayList<>();
      for (int n = 1 + r.nextInt(3); n > 0; n--) {
        parts.add(part(r));
      }
      String key = encode(parts);
      List<Part> before = seen.putIfAbsent(key, parts);
      assertThat(before == null || before.equals(parts)).as("%s and %s both give %s", before, parts, key).isTrue();
    }
  }

  /** A key as the front ends compose it: one part as it is, several joined ({@code KeyResolver.and}, Envoy's entries). */
  static String encode(List<Part> parts) {
    if (parts.size() == 1) {
      return parts.get(0).encode();
    }
    List<String> encoded = new ArrayList<>();
    for (Part p : parts) {
      encoded.add(p.encode());
    }
    return Keys.join(encoded);
  }

  static Part part(SplittableRandom r) {
    String source = SOURCES[r.nextInt(SOURCES.length)];
    // A header always carries its name; no other source does (the rule that makes kind:name:value read one way).
    String name = source.equals(Keys.HEADER) ? text(r, 0) : null;
    String value = text(r, name == null ? 0 : 1);
    boolean shared = name == null && r.nextInt(4) == 0;
    return new Part(source, name, value, shared);
  }

  /** A short string over the separators, at least {@code min} non-blank characters long when {@code min} > 0. */
  static String text(SplittableRandom r, int min) {
    StringBuilder b = new StringBuilder();
    for (int n = r.nextInt(5); n > 0; n--) {
      b.append(ALPHABET[r.nextInt(ALPHABET.length)]);
    }
    if (min > 0 && b.toString().isBlank()) {
      b.append('a');
    }
    return b.toString();
  }

  @Test void aBlankValueIsNoIdentityAndPlainValuesReadAsWritten() {
    assertThat(Keys.key(Keys.USER, " ")).isNull();
    assertThat(Keys.key(Keys.USER, null)).isNull();
    assertThat(Keys.header("X-Api-Key", " abc ")).isEqualTo("header:x-api-key:abc");
    assertThat(Keys.key(Keys.IP, "2001:db8::1")).isEqualTo("ip:2001:db8::1");
    assertThat(Keys.join(Keys.key(Keys.USER, "alice"), Keys.key(Keys.ROUTE, "GET /export"))).isEqualTo("user:alice|route:GET /export");
    assertThat(Keys.key(Keys.USER, "a|b\\c")).isEqualTo("user:a\\|b\\\\c");
    assertThat(Keys.hashed("x")).isEqualTo("sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881");
  }
}

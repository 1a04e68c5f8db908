package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.kernel.PolicyWords;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 32, item 7: the generated configuration metadata (what the IDE completes) lists every nested
 * property of {@code sluice.policies[*]} and {@code sluice.http.rules[*]} with a description, and
 * the algorithm names as value hints, each one the policy shape knows. Read from the jar's JSON.
 */
class ConfigurationMetadataTest {
  static JsonNode metadata() throws Exception {
    try (InputStream in = ConfigurationMetadataTest.class.getClassLoader()
        .getResourceAsStream("META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("the generated metadata").isNotNull();
      return new ObjectMapper().readTree(in);
    }
  }

  static Map<String, JsonNode> properties(JsonNode m) {
    Map<String, JsonNode> byName = new LinkedHashMap<>();
    m.get("properties").forEach(p -> byName.put(p.get("name").asText(), p));
    return byName;
  }

  /** A field's property name: {@code refillTokens} is {@code refill-tokens}. */
  static List<String> words(Class<?> type) {
    List<String> w = new ArrayList<>();
    for (Field f : type.getDeclaredFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        w.add(f.getName().replaceAll("([A-Z])", "-$1").toLowerCase(Locale.ROOT));
      }
    }
    return w;
  }

  @Test void everyNestedPropertyIsListedWithADescription() throws Exception {
    Map<String, JsonNode> props = properties(metadata());
    for (String w : words(PolicyEntry.class)) {
      JsonNode p = props.get("sluice.policies[*]." + w);
      assertThat(p).as("sluice.policies[*].%s", w).isNotNull();
      assertThat(p.path("description").asText()).as("sluice.policies[*].%s", w).isNotBlank();
    }
    for (String w : words(SluiceProperties.Rule.class)) {
      String name = "sluice.http.rules[*]." + w;
      if (w.equals("response")) {
        for (String r : words(SluiceProperties.Response.class)) {
          assertThat(props.get(name + "." + r)).as(name + "." + r).isNotNull();
          assertThat(props.get(name + "." + r).path("description").asText()).isNotBlank();
        }
        continue;
      }
      assertThat(props.get(name)).as(name).isNotNull();
      assertThat(props.get(name).path("description").asText()).as(name).isNotBlank();
    }
    // Everything the processor generates from SluiceProperties carries a description too.
    props.forEach((n, p) -> {
      if (n.startsWith("sluice.")) {
        assertThat(p.path("description").asText()).as(n).isNotBlank();
      }
    });
  }

  @Test void theAlgorithmsAreValueHintsTheShapeKnows() throws Exception {
    List<String> algorithms = new ArrayList<>();
    metadata().get("hints").forEach(h -> {
      if (h.get("name").asText().equals("sluice.policies[*].algorithm")) {
        h.get("values").forEach(v -> {
          algorithms.add(v.get("value").asText());
          assertThat(v.path("description").asText()).isNotBlank();
        });
      }
    });
    assertThat(algorithms).containsExactly("fixed-window", "sliding-window", "sliding-log", "token-bucket", "gcra");
    for (String a : algorithms) {
      // An unknown parameter is refused with the algorithm's own parameters: the word is an algorithm.
      Throwable t = catchThrowable(() -> PolicyWords.policy(Map.of("name", "p", "algorithm", a, "zzz", 1), "x"));
      assertThat(t).hasMessageContaining("unknown parameter 'zzz'; " + a + " takes ");
    }
    Throwable t = catchThrowable(() -> PolicyWords.policy(Map.of("name", "p", "algorithm", "token-bukket", "zzz", 1), "x"));
    assertThat(t).hasMessageContaining("unknown algorithm 'token-bukket'");
  }
}

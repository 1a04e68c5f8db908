package dev.sluice.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sluice.Policy;
import dev.sluice.kernel.PolicyWords;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The policy file of {@code sluice serve}: YAML with one top-level field, {@code policies:}, a list
 * of entries in the shape {@link PolicyWords} defines (the Spring Boot starter's
 * {@code sluice.policies} is the same shape).
 *
 * <pre>{@code
 * policies:
 *   - name: login
 *     algorithm: fixed-window      # limit per window; a window opens on a key's first hit
 *     limit: 5
 *     window: 1m
 * }</pre>
 * Every mistake is reported with the entry it is in; nothing is guessed or defaulted silently.
 */
final class PolicyFile {
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  private PolicyFile() {}

  /** Reads and validates {@code file}; every error is an {@link IllegalArgumentException} naming the file and the entry. */
  static List<Policy> read(Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      return parse(YAML.readTree(in), file.toString());
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("policy file " + file + " does not exist");
    } catch (IOException e) {
      throw new IllegalArgumentException("policy file " + file + " is not valid YAML" + where(e) + ": " + firstLine(reason(e)));
    }
  }

  static List<Policy> parse(String yaml, String source) {
    try {
      return parse(YAML.readTree(yaml), source);
    } catch (IOException e) {
      throw new IllegalArgumentException(source + " is not valid YAML" + where(e) + ": " + firstLine(reason(e)));
    }
  }

  private static List<Policy> parse(JsonNode root, String source) {
    if (root == null || !root.isObject() || !root.has("policies")) {
      throw new IllegalArgumentException(source + ": expected a top-level 'policies:' list");
    }
    for (Iterator<String> it = root.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!f.equals("policies")) {
        throw new IllegalArgumentException(source + ": unknown top-level field '" + f + "'; the file holds 'policies:' only");
      }
    }
    return PolicyWords.policies(YAML.convertValue(root.get("policies"), Object.class), source);
  }

  /** The policy's parameters as written in the file (for {@code GET /v1/policies}). */
  static Map<String, Object> describe(Policy p) {
    return PolicyWords.describe(p);
  }

  /** Where the YAML parser stopped, as people count (line 1, column 1), or nothing when it did not say. */
  private static String where(IOException e) {
    if (e instanceof com.fasterxml.jackson.core.JsonProcessingException j && j.getLocation() != null && j.getLocation().getLineNr() > 0) {
      return " (line " + j.getLocation().getLineNr() + ", column " + j.getLocation().getColumnNr() + ")";
    }
    return "";
  }

  private static String reason(IOException e) {
    return e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "unreadable";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}

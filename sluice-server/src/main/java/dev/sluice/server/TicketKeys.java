package dev.sluice.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The keys that sign refund tickets, each with an id so that keys can rotate: the first signs, every
 * one verifies. Instances behind one load balancer share them ({@code --ticket-keys FILE} or the
 * environment variable {@code SLUICE_TICKET_KEYS}), so that any instance refunds a ticket any other
 * issued. Without shared keys, one key of 32 random bytes is drawn when the process starts.
 *
 * <p>Format: one key per line (or per comma in the variable), {@code ID:BASE64}, the secret at least
 * 32 bytes once decoded (standard or URL-safe base64); blank lines and {@code #} comments are
 * skipped. To rotate: add the new key as the second line everywhere, then move it first, then drop
 * the old one after a ticket's lifetime.
 */
final class TicketKeys {
  static final String ENV = "SLUICE_TICKET_KEYS";
  private static final Pattern ID = Pattern.compile("[A-Za-z0-9._-]{1,32}");
  static final int MIN_SECRET_BYTES = 32;

  private final String signingId;
  private final Map<String, byte[]> secrets;
  private final boolean shared;

  private TicketKeys(Map<String, byte[]> secrets, boolean shared) {
    this.secrets = Map.copyOf(secrets);
    this.signingId = secrets.keySet().iterator().next();
    this.shared = shared;
  }

  /** One random key for this process: tickets refund only here. */
  static TicketKeys random() {
    byte[] s = new byte[MIN_SECRET_BYTES];
    new SecureRandom().nextBytes(s);
    Map<String, byte[]> m = new LinkedHashMap<>();
    m.put("local", s);
    return new TicketKeys(m, false);
  }

  /** Parses keys from {@code text} ({@code source} names where it came from, for the messages). */
  static TicketKeys parse(String text, String source) {
    Map<String, byte[]> m = new LinkedHashMap<>();
    int n = 0;
    for (String raw : text.split("[\\n,]")) {
      n++;
      String line = raw.strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int colon = line.indexOf(':');
      String id = colon < 0 ? "" : line.substring(0, colon);
      if (!ID.matcher(id).matches()) {
        throw new IllegalArgumentException(source + ", entry " + n + ": a key is ID:BASE64 with an id of [A-Za-z0-9._-]{1,32}; got "
            + (colon < 0 ? "no ':'" : "id '" + id + "'"));
      }
      byte[] secret;
      try {
        String b64 = line.substring(colon + 1).strip();
        secret = b64.indexOf('-') >= 0 || b64.indexOf('_') >= 0 ? Base64.getUrlDecoder().decode(b64) : Base64.getDecoder().decode(b64);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(source + ", key '" + id + "': the secret is not base64 (" + e.getMessage() + ")");
      }
      if (secret.length < MIN_SECRET_BYTES) {
        throw new IllegalArgumentException(source + ", key '" + id + "': the secret is " + secret.length + " bytes; give at least "
            + MIN_SECRET_BYTES + " random bytes, e.g. head -c 32 /dev/urandom | base64");
      }
      if (m.put(id, secret) != null) {
        throw new IllegalArgumentException(source + ": key id '" + id + "' appears twice; each key needs its own id");
      }
    }
    if (m.isEmpty()) {
      throw new IllegalArgumentException(source + " holds no key; write one ID:BASE64 per line");
    }
    return new TicketKeys(m, true);
  }

  /** {@code --ticket-keys FILE}, else {@code SLUICE_TICKET_KEYS}, else a random per-process key. */
  static TicketKeys load(Path file, String env) {
    if (file != null) {
      try {
        return parse(Files.readString(file, StandardCharsets.UTF_8), "--ticket-keys " + file);
      } catch (IOException e) {
        throw new IllegalArgumentException("--ticket-keys " + file + " cannot be read (" + e.getMessage() + ")");
      }
    }
    if (env != null && !env.isBlank()) {
      return parse(env, ENV);
    }
    return random();
  }

  String signingId() {
    return signingId;
  }

  /** The secret of {@code id}, or null when this server does not hold it. */
  byte[] secret(String id) {
    return secrets.get(id);
  }

  List<String> ids() {
    return new ArrayList<>(secrets.keySet());
  }

  /** True when the keys came from configuration (shared), false for the per-process random key. */
  boolean shared() {
    return shared;
  }
}

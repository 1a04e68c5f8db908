package dev.sluice.redis.internal;

import dev.sluice.internal.Checks;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The Lua scripts, one per algorithm, kept as resources in {@code dev/sluice/redis}. Each is the shared
 * {@code prelude.lua} (argument parsing, exact integer division, state read/write with TTL)
 * followed by the algorithm's file. Run by EVALSHA; on NOSCRIPT the body goes once with EVAL, which
 * also caches it on that server. The invariant constants ({@code ${MAX_CLOCK}}, {@code ${MAX_EXACT}}, {@code ${MAX_STATE_WORD}}, {@code ${CLOCK_TOLERANCE}})
 * are substituted from {@link Checks} as the scripts load, so Lua and Java share one value.
 *
 * <p>Public in a package the module does not export: the Redis backend and the benchmarks' script
 * cost (which sends exactly the body the limiter sends) read it; no user does.
 */
public enum RedisScript {
  FIXED_WINDOW("fixed-window.lua", 'f'),
  SLIDING_WINDOW("sliding-window.lua", 's'),
  TOKEN_BUCKET("token-bucket.lua", 't'),
  GCRA("gcra.lua", 'g'),
  SLIDING_LOG("sliding-log.lua", 'l'),
  /** Sets, clears and reads a key's override (no prelude: it decides nothing). */
  OVERRIDE("override.lua", ' ');

  /** The prelude and the algorithm's file, its constants substituted: what EVAL sends. */
  public final String body;
  /** The SHA-1 of {@link #body}: what EVALSHA sends. */
  public final String sha;
  /** The letter an override of this script's algorithm starts with ({@link RedisPlan#overrideValue}). */
  public final char tag;

  /**
   * An algorithm's script is the prelude, then the algorithm's file as the body of one function, whose
   * reply a decision under the key's override ends with the override's value (see prelude.lua).
   */
  RedisScript(String file, char tag) {
    this.tag = tag;
    String text = tag == ' ' ? read(file)
        : read("prelude.lua").replace("${TAG}", String.valueOf(tag)) + "\nlocal function decide()\n" + read(file)
            + "\nend\nlocal reply = decide()\nif OV and reply[1] == 0 then\n  reply[#reply + 1] = OV\nend\nreturn reply\n";
    this.body = text
        .replace("${MAX_CLOCK}", Long.toString(Checks.MAX_CLOCK))
        .replace("${MAX_EXACT}", Long.toString(Checks.MAX_EXACT))
        .replace("${CLOCK_TOLERANCE}", Long.toString(Checks.CLOCK_TOLERANCE_MICROS))
        .replace("${MAX_STATE_WORD}", Long.toString(Checks.MAX_STATE_WORD));
    this.sha = sha1(body);
  }

  /** The algorithm script whose override letter is {@code tag}, or null. */
  public static RedisScript ofTag(char tag) {
    for (RedisScript s : values()) {
      if (s.tag == tag && tag != ' ') {
        return s;
      }
    }
    return null;
  }

  private static String read(String name) {
    try (InputStream in = RedisScript.class.getResourceAsStream("/dev/sluice/redis/" + name)) {
      if (in == null) {
        throw new IllegalStateException("script resource dev/sluice/redis/" + name + " is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String sha1(String s) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is required of every Java platform", e);
    }
  }
}

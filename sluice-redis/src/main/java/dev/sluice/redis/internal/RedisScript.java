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
  FIXED_WINDOW("fixed-window.lua"),
  SLIDING_WINDOW("sliding-window.lua"),
  TOKEN_BUCKET("token-bucket.lua"),
  GCRA("gcra.lua"),
  SLIDING_LOG("sliding-log.lua");

  /** The prelude and the algorithm's file, its constants substituted: what EVAL sends. */
  public final String body;
  /** The SHA-1 of {@link #body}: what EVALSHA sends. */
  public final String sha;

  RedisScript(String file) {
    this.body = (read("prelude.lua") + "\n" + read(file))
        .replace("${MAX_CLOCK}", Long.toString(Checks.MAX_CLOCK))
        .replace("${MAX_EXACT}", Long.toString(Checks.MAX_EXACT))
        .replace("${CLOCK_TOLERANCE}", Long.toString(Checks.CLOCK_TOLERANCE_MICROS))
        .replace("${MAX_STATE_WORD}", Long.toString(Checks.MAX_STATE_WORD));
    this.sha = sha1(body);
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

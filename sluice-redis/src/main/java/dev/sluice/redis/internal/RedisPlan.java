package dev.sluice.redis.internal;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.Ticket;
import dev.sluice.internal.AlgorithmKind;
import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;

/**
 * A policy compiled for the scripts: which script, and its parameters as the decimal strings the
 * script receives. The scripts compute in Lua doubles, so every value they see must stay an exact
 * integer: the core's bounds ({@link Checks#MAX_EXACT}, {@link Checks#MAX_AHEAD}) guarantee it.
 * With the keys a script touches ({@link #storedKey}, {@link #spentKey}).
 *
 * <p>Public in a package the module does not export: the Redis backend and the benchmarks' script
 * cost read it; no user does.
 */
public final class RedisPlan {
  public final Policy policy;
  public final RedisScript script;
  private final String[] params;

  private RedisPlan(Policy policy, RedisScript script, String... params) {
    this.policy = policy;
    this.script = script;
    this.params = params;
  }

  /**
   * Compiles {@code policy}. Every range the scripts rely on (each value an exact integer in Lua
   * doubles) is a rule of the core's {@link Algorithm} records, so any valid policy compiles.
   */
  public static RedisPlan of(Policy policy) {
    Checks.notNull("policy", policy);
    Algorithm alg = policy.algorithm();
    if (alg instanceof Algorithm.FixedWindow fw) {
      return new RedisPlan(policy, RedisScript.FIXED_WINDOW, Long.toString(fw.limit()), Long.toString(fw.windowMicros()));
    }
    if (alg instanceof Algorithm.SlidingWindow sw) {
      return new RedisPlan(policy, RedisScript.SLIDING_WINDOW, Long.toString(sw.limit()), Long.toString(sw.windowMicros()));
    }
    if (alg instanceof Algorithm.TokenBucket tb) {
      long full = tb.capacity() * tb.refillPeriodMicros();
      // A refill rate of twice capacity x period or more refills a bucket a whole capacity in debt
      // (ReferenceModel.settle) in one microsecond, exactly like 2 x full does; sending the smaller
      // number keeps every product under 2^53.
      long refill = Math.min(tb.refillTokens(), 2 * full);
      return new RedisPlan(policy, RedisScript.TOKEN_BUCKET,
          Long.toString(tb.capacity()), Long.toString(refill), Long.toString(tb.refillPeriodMicros()));
    }
    if (alg instanceof Algorithm.Gcra g) {
      return new RedisPlan(policy, RedisScript.GCRA,
          Long.toString(g.rate()), Long.toString(g.periodMicros()), Long.toString(g.burst()));
    }
    Algorithm.SlidingLog sl = (Algorithm.SlidingLog) alg;
    return new RedisPlan(policy, RedisScript.SLIDING_LOG, Long.toString(sl.limit()), Long.toString(sl.windowMicros()));
  }

  /**
   * The script's ARGV: op, now ('' = server clock), permits, stamp, grace ms, the end of the ticket's
   * life (refunds and overruns, else 0), then the parameters.
   */
  public String[] argv(String op, String now, long permits, long stamp, String graceMillis, long ticketEnds) {
    return argv(op, now, Long.toString(permits), stamp, graceMillis, ticketEnds);
  }

  /** The ARGV of a batch ('b'): the permits of each request in order, separated by spaces. */
  public String[] batchArgv(String now, long[] permits, String graceMillis) {
    StringBuilder list = new StringBuilder(permits.length * 3);
    for (long n : permits) {
      list.append(list.length() == 0 ? "" : " ").append(n);
    }
    return argv("b", now, list.toString(), 0, graceMillis, 0);
  }

  /** Whether the script decides batches: every algorithm but the sliding log (a sorted set per request). */
  public boolean batches() {
    return !(policy.algorithm() instanceof Algorithm.SlidingLog);
  }

  /** The Redis key holding {@code key}'s state under {@code policy}: its name and the key, nothing else, one hash tag. */
  public static String storedKey(Policy policy, String key) {
    return "sluice:{" + StoredId.key(policy.name(), key) + "}";
  }

  /** Where the override of the budget stored at {@code stored} is kept (the same hash tag: one Cluster slot; see prelude.lua). */
  public static String overrideKey(String stored) {
    return stored + ":o";
  }

  /**
   * How this plan's policy is kept as a key's override: its script's letter and the parameters this
   * plan sends, which the script reads instead of the caller's, then the algorithm as Sluice stores it
   * ({@link AlgorithmKind#text}), which the client reads back: {@code t 5 1 1000000|token-bucket:5:1:1000000}.
   */
  public String overrideValue() {
    return script.tag + " " + String.join(" ", params) + "|" + AlgorithmKind.text(policy.algorithm());
  }

  /**
   * The policy an override's value (as a script replies it) stands for under {@code asked}'s name:
   * {@code asked} itself when it is its algorithm. An {@link IllegalArgumentException} for a value
   * Sluice did not write.
   */
  public static Policy overridden(Policy asked, String value) {
    int bar = value == null ? -1 : value.indexOf('|');
    if (bar < 0) {
      throw new IllegalArgumentException("'" + value + "' is not an override Sluice wrote");
    }
    Algorithm a = AlgorithmKind.fromText(value.substring(bar + 1));
    return a.equals(asked.algorithm()) ? asked : new Policy(asked.name(), a);
  }

  /** Where a ticket applied to the budget stored at {@code stored} is recorded as spent (the same hash tag: one Cluster slot). */
  public static String spentKey(String stored, Ticket ticket) {
    return stored + ":t:" + ticket.id();
  }

  private String[] argv(String op, String now, String permits, long stamp, String graceMillis, long ticketEnds) {
    String[] a = new String[6 + params.length];
    a[0] = op;
    a[1] = now;
    a[2] = permits;
    a[3] = Long.toString(stamp);
    a[4] = graceMillis;
    a[5] = Long.toString(ticketEnds);
    System.arraycopy(params, 0, a, 6, params.length);
    return a;
  }
}

package dev.sluice.benchmarks;

import dev.sluice.benchmarks.BenchmarkReport.Figure;
import dev.sluice.benchmarks.BenchmarkReport.Results;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Redis and PostgreSQL suites of {@link BenchmarkReport}. They refer to the backend benchmarks
 * only by name, so the report still builds and runs (and says what is missing) where a backend or its
 * server is absent.
 */
final class RemoteSuites {
  private RemoteSuites() {}

  static final int[] THREADS = {1, 2, 16};

  static boolean present(String className) {
    try {
      Class.forName(className, false, RemoteSuites.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  // --- Redis --------------------------------------------------------------------------------------

  static void redis(BenchmarkReport r) throws Exception {
    r.line("## Redis (`RedisBenchmark`, `RedisCommandCount`)");
    r.line("");
    String url = System.getenv().getOrDefault("SLUICE_REDIS_URL", "redis://127.0.0.1:6379");
    if (!present("dev.sluice.benchmarks.RedisBenchmark")) {
      r.line("Not run: this build has no `RedisBenchmark` (the Redis backend, `dev.sluice.redis.RedisRateLimiter`,");
      r.line("had not landed on main when it was made).");
      r.line("");
      r.target("Redis: every target", "see issue 8", "not measured (backend missing)", false);
      return;
    }
    if (!reachable("dev.sluice.benchmarks.RedisFixture")) {
      r.line("Skipped: no Redis answered at `" + url + "` (set `SLUICE_REDIS_URL`).");
      r.line("");
      r.target("Redis: every target", "see issue 8", "not measured (server unreachable)", false);
      return;
    }
    r.line("Server: `" + url + "` (shared with other builds running at the same time). Every check is allowed (token");
    r.line("bucket, capacity and refill 10^9/s), so every check writes. Sluice: `RedisRateLimiter` (one EVALSHA, server");
    r.line("clock, 5 s deadline so that no call is decided by its failure mode). Bucket4j: `Bucket4jLettuce.casBasedBuilder`");
    r.line("(GET, then EVAL compare-and-swap, retried on conflict). `evalshaCeiling`: one EVALSHA of `return 1` through");
    r.line("Lettuce. One Lettuce connection each; `keys=1` is one hot key, `keys=10000` draws a key uniformly.");
    r.line("");
    Figure hot16 = null;
    for (int t : THREADS) {
      Results res = r.runJmh("dev.sluice.benchmarks.RedisBenchmark\\.(sluice|bucket4j|evalshaCeiling)$", t, "redis");
      r.line("### " + t + (t == 1 ? " thread" : " threads"));
      r.line("");
      r.figureTable(res.figures, "keys");
      r.line("| keys | Sluice | Sluice / Bucket4j | Sluice / EVALSHA ceiling |");
      r.line("|---|---:|---:|---:|");
      for (String k : new String[] {"1", "10000"}) {
        Figure s = res.find("sluice", "keys", k);
        Figure b = res.find("bucket4j", "keys", k);
        Figure c = res.find("evalshaCeiling", "keys", k);
        r.line("| " + k + " | " + (s == null ? "n/a" : BenchmarkReport.fmtScore(s.score()) + "/s") + " | "
            + BenchmarkReport.ratio(s, b) + " | " + BenchmarkReport.ratio(s, c) + " |");
        if (t == 16 && k.equals("1")) {
          hot16 = s;
          double vb = BenchmarkReport.ratioValue(s, b);
          double vc = BenchmarkReport.ratioValue(s, c);
          r.target("Redis, hot key, 16T: Sluice / Bucket4j", "≥ 10x", fmt(vb) + "x", vb >= 10);
          r.target("Redis, hot key, 16T: Sluice / single-EVALSHA ceiling", "≥ 1.0", fmt(vc), vc >= 1.0); // issue 18
        }
      }
      r.line("");
    }

    Results async = r.runJmh("dev.sluice.benchmarks.RedisBenchmark\\.(sluiceAsync|evalshaAsyncCeiling)$", 1, "redis-async");
    r.line("### Async, " + 64 + " decisions in flight on one thread");
    r.line("");
    r.figureTable(async.figures, "keys");
    Map<String, Double> rb = redisBenchmark(r, url);
    Figure sa = async.find("sluiceAsync", "keys", "10000");
    Figure sah = async.find("sluiceAsync", "keys", "1");
    Double plain = rb.get("-c 16");
    for (Map.Entry<String, Double> e : rb.entrySet()) {
      String cmd = e.getKey().contains("Sluice")
          ? "-c 16 -n 200000 EVALSHA <sha of Sluice's token-bucket script> 1 <one key> a \"\" 1 0 0 <capacity> <refill> <period>"
          : e.getKey() + " -n 200000 EVALSHA <sha of return 1> 0";
      r.line("- `redis-benchmark " + cmd + "`: "
          + (e.getValue() == null ? "failed" : BenchmarkReport.fmtScore(e.getValue()) + " requests/s"));
    }
    r.line("");
    Double own = rb.get("-c 16, Sluice's token-bucket script");
    if (own != null && hot16 != null) {
      r.line(String.format(Locale.ROOT, "Sluice's script on one key costs the server itself %.2fx the time of `return 1` "
          + "(redis-benchmark rates above); Sluice's own client at 16 threads on a hot key reached %.2f of its script's "
          + "server ceiling.", plain == null ? Double.NaN : plain / own, hot16.score() / own));
      r.line("");
    }
    if (sa != null && plain != null) {
      double v = sa.score() / plain;
      double vh = sah == null ? Double.NaN : sah.score() / plain;
      r.line(String.format(Locale.ROOT, "Sluice async / `redis-benchmark -c 16`: %.2fx (10,000 keys), %.2fx (hot key).", v, vh));
      r.line("");
      r.target("Redis, async path, many in flight: Sluice / `redis-benchmark` EVALSHA", "≥ 1.0x", fmt(v) + "x (10k keys), " + fmt(vh) + "x (hot)", v >= 1.0);
    } else {
      r.target("Redis, async path: Sluice / `redis-benchmark` EVALSHA", "≥ 1.0x", "not measured", false);
    }

    Results client = r.runJmh("dev.sluice.benchmarks.ClientCostBenchmark\\.", 1, "client-cost");
    r.line("### Client-side work per decision before any I/O (`ClientCostBenchmark`)");
    r.line("");
    r.line("`storedIdKey`: `StoredId.key(policy, key)`, the SHA-256 id every Redis and PostgreSQL decision computes.");
    r.line("");
    r.figureTable(client.figures);
    r.line("### Commands per decision");
    r.line("");
    r.line("Counted by each library's own Lettuce client (`CommandListener`), over 2,000 allowed checks per row.");
    r.line("");
    String out = r.spawn("dev.sluice.benchmarks.RedisCommandCount", "2000");
    countTable(r, out, "CMDS", "commands", "Redis");
  }

  /** Loads {@code return 1} and runs {@code redis-benchmark} on it, unpipelined and pipelined. */
  static Map<String, Double> redisBenchmark(BenchmarkReport r, String url) throws Exception {
    Map<String, Double> res = new LinkedHashMap<>();
    java.net.URI u = java.net.URI.create(url);
    String host = u.getHost() == null ? "127.0.0.1" : u.getHost();
    String port = Integer.toString(u.getPort() < 0 ? 6379 : u.getPort());
    String sha = sha1("return 1");
    r.exec("redis-cli", "-h", host, "-p", port, "SCRIPT", "LOAD", "return 1");
    String sluiceSha = loadSluiceTokenBucketScript(url);
    for (String[] v : new String[][] {{"-c", "16"}, {"-c", "16", "-P", "16"}}) {
      String[] cmd = new String[9 + v.length];
      int i = 0;
      cmd[i++] = "redis-benchmark";
      cmd[i++] = "-h";
      cmd[i++] = host;
      cmd[i++] = "-p";
      cmd[i++] = port;
      for (String x : v) {
        cmd[i++] = x;
      }
      cmd[i++] = "-n";
      cmd[i++] = "200000";
      cmd[i++] = "-q";
      String[] full = java.util.Arrays.copyOf(cmd, i + 3);
      full[i] = "EVALSHA";
      full[i + 1] = sha;
      full[i + 2] = "0";
      r.sampleLoad("before redis-benchmark " + String.join(" ", v));
      String out = r.exec(full);
      Matcher m = Pattern.compile("([0-9.]+) requests per second").matcher(out);
      Double last = null;
      while (m.find()) {
        last = Double.parseDouble(m.group(1));
      }
      res.put(String.join(" ", v), last);
    }
    if (sluiceSha != null) {
      // Sluice's own token-bucket script on one hot key, arguments as RedisRateLimiter sends them
      // (acquire, server clock, 1 permit, stamp 0, grace 0, capacity, refill, period): the server's
      // ceiling for Sluice's script, without any client cost.
      String key = "sluice-bench:redis-benchmark:{" + Long.toHexString(System.nanoTime()) + "}";
      r.sampleLoad("before redis-benchmark on Sluice's script");
      String out = r.exec("redis-benchmark", "-h", host, "-p", port, "-c", "16", "-n", "200000", "-q",
          "EVALSHA", sluiceSha, "1", key, "a", "", "1", "0", "0",
          Long.toString(Limiters.Load.ALLOWED.capacity), Long.toString(Limiters.Load.ALLOWED.refill),
          Long.toString(Limiters.Load.ALLOWED.period.toNanos() / 1_000));
      Matcher m = Pattern.compile("([0-9.]+) requests per second").matcher(out);
      Double last = null;
      while (m.find()) {
        last = Double.parseDouble(m.group(1));
      }
      res.put("-c 16, Sluice's token-bucket script", last);
      r.exec("redis-cli", "-h", host, "-p", port, "DEL", key);
    }
    return res;
  }

  /** Loads Sluice's token-bucket script (prelude + algorithm, as {@code RedisScript} builds it); its SHA or null. */
  static String loadSluiceTokenBucketScript(String url) {
    ClassLoader cl = RemoteSuites.class.getClassLoader();
    try (java.io.InputStream a = cl.getResourceAsStream("dev/sluice/redis/prelude.lua");
         java.io.InputStream b = cl.getResourceAsStream("dev/sluice/redis/token-bucket.lua")) {
      if (a == null || b == null) {
        return null;
      }
      String body = new String(a.readAllBytes(), StandardCharsets.UTF_8) + "\n" + new String(b.readAllBytes(), StandardCharsets.UTF_8);
      io.lettuce.core.RedisClient c = io.lettuce.core.RedisClient.create(url);
      try (io.lettuce.core.api.StatefulRedisConnection<String, String> conn = c.connect()) {
        return conn.sync().scriptLoad(body);
      } finally {
        c.shutdown();
      }
    } catch (java.io.IOException | RuntimeException e) {
      return null;
    }
  }

  static String sha1(String s) throws NoSuchAlgorithmException {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8)));
  }

  // --- PostgreSQL ---------------------------------------------------------------------------------

  static void postgres(BenchmarkReport r) throws Exception {
    r.line("## PostgreSQL (`PostgresBenchmark`, `PostgresStatementCount`)");
    r.line("");
    String url = System.getenv().getOrDefault("SLUICE_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
    if (!present("dev.sluice.benchmarks.PostgresBenchmark")) {
      r.line("Not run: this build has no `PostgresBenchmark` (the PostgreSQL backend, `dev.sluice.jdbc.JdbcRateLimiter`,");
      r.line("had not landed on main when it was made).");
      r.line("");
      r.target("PostgreSQL: every target", "see issue 8", "not measured (backend missing)", false);
      return;
    }
    if (!reachable("dev.sluice.benchmarks.PostgresFixture")) {
      r.line("Skipped: no PostgreSQL answered at `" + url + "` (set `SLUICE_POSTGRES_URL`).");
      r.line("");
      r.target("PostgreSQL: every target", "see issue 8", "not measured (server unreachable)", false);
      return;
    }
    r.line("Server: `" + url + "` (shared with other builds running at the same time; its `synchronous_commit` and");
    r.line("`fsync` settings are listed below). Every check is allowed (token bucket, 10^9/s), so every check writes.");
    r.line("Sluice: `JdbcRateLimiter`, one upsert per decision in autocommit, durable (`sluiceDurable`) or with");
    r.line("`relaxedDurability(true)` (`sluiceRelaxed`: `synchronous_commit = off` for its own transactions only), or on an");
    r.line("`UNLOGGED` table (`sluiceUnlogged`); concurrent checks of one key coalesced into one batch statement (`maxBatch` 64).");
    r.line("Bucket4j: `Bucket4jPostgreSQL.selectForUpdateBasedBuilder` and `advisoryLockBasedBuilder`, always durable.");
    r.line("16 pooled connections (HikariCP) per limiter; own tables, dropped afterwards.");
    r.line("");
    r.line("Server settings: " + r.exec("psql", jdbcToPsql(url), "-Atc",
        "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where name in ('synchronous_commit','fsync','wal_sync_method','commit_delay','max_connections','shared_buffers')").trim());
    r.line("");
    for (int t : THREADS) {
      Results res = r.runJmh("dev.sluice.benchmarks.PostgresBenchmark\\.", t, "postgres");
      r.line("### " + t + (t == 1 ? " thread" : " threads"));
      r.line("");
      r.figureTable(res.figures, "keys");
      r.line("| keys | Sluice durable | durable / B4j select-for-update | durable / B4j advisory | relaxed / B4j select-for-update | relaxed / B4j advisory |");
      r.line("|---|---:|---:|---:|---:|---:|");
      for (String k : new String[] {"1", "10000"}) {
        Figure d = res.find("sluiceDurable", "keys", k);
        Figure x = res.find("sluiceRelaxed", "keys", k);
        Figure sfu = res.find("bucket4jSelectForUpdate", "keys", k);
        Figure adv = res.find("bucket4jAdvisoryLock", "keys", k);
        r.line("| " + k + " | " + (d == null ? "n/a" : BenchmarkReport.fmtScore(d.score()) + "/s") + " | "
            + BenchmarkReport.ratio(d, sfu) + " | " + BenchmarkReport.ratio(d, adv) + " | "
            + BenchmarkReport.ratio(x, sfu) + " | " + BenchmarkReport.ratio(x, adv) + " |");
        if (t == 16) {
          Figure best = sfu == null ? adv : adv == null ? sfu : (sfu.score() >= adv.score() ? sfu : adv);
          double vd = BenchmarkReport.ratioValue(d, best);
          double vx = BenchmarkReport.ratioValue(x, best);
          String which = best == null ? "" : " (vs " + best.method() + ", the faster Bucket4j)";
          r.target("PostgreSQL, " + (k.equals("1") ? "hot key" : "10,000 keys") + ", 16T: Sluice durable / Bucket4j" + which, "≥ 1.5x", fmt(vd) + "x", vd >= 1.5);
          r.target("PostgreSQL, " + (k.equals("1") ? "hot key" : "10,000 keys") + ", 16T: Sluice relaxed / Bucket4j" + which, "≥ 5x", fmt(vx) + "x", vx >= 5);
        }
      }
      r.line("");
    }
    r.line("### Statements per decision");
    r.line("");
    r.line("Counted at the JDBC boundary (`CountingDataSource` around each pool): statement executions plus commits and");
    r.line("rollbacks, each one round trip with the PostgreSQL driver; over 400 allowed checks per row.");
    r.line("");
    String out = r.spawn("dev.sluice.benchmarks.PostgresStatementCount", "400");
    countTable(r, out, "STMTS", "round trips", "PostgreSQL");
  }

  static String jdbcToPsql(String jdbcUrl) {
    // jdbc:postgresql://host:port/db?user=u  ->  postgresql://u@host:port/db
    String rest = jdbcUrl.replaceFirst("^jdbc:", "");
    java.net.URI u = java.net.URI.create(rest);
    String user = "postgres";
    if (u.getQuery() != null) {
      for (String kv : u.getQuery().split("&")) {
        if (kv.startsWith("user=")) {
          user = kv.substring(5);
        }
      }
    }
    return "postgresql://" + user + "@" + u.getHost() + ":" + (u.getPort() < 0 ? 5432 : u.getPort()) + u.getPath();
  }

  // --- shared -------------------------------------------------------------------------------------

  static void countTable(BenchmarkReport r, String out, String tag, String what, String store) {
    r.line("| library | threads | keys | decisions | " + what + " | per decision |");
    r.line("|---|---:|---:|---:|---:|---:|");
    double sluiceMax = 0;
    boolean any = false;
    for (String l : out.split("\n")) {
      if (!l.startsWith(tag + " ")) {
        continue;
      }
      String[] f = l.trim().split(" ");
      long decisions = Long.parseLong(f[4]);
      long n = Long.parseLong(f[5]);
      double per = (double) n / decisions;
      r.line("| " + f[1] + " | " + f[2] + " | " + f[3] + " | " + decisions + " | " + n + " | " + fmt(per) + " |");
      if (f[1].startsWith("sluice")) {
        sluiceMax = Math.max(sluiceMax, per);
        any = true;
      }
    }
    r.line("");
    if (!any) {
      r.line("The count failed:");
      r.line("");
      r.line("```");
      r.line(out);
      r.line("```");
      r.line("");
    }
    r.target(store + ": " + what + " per Sluice decision (worst row)", "exactly 1", any ? fmt(sluiceMax) : "not measured",
        any && Math.abs(sluiceMax - 1.0) < 1e-9);
  }

  static boolean reachable(String fixture) {
    try {
      return (Boolean) Class.forName(fixture).getDeclaredMethod("reachable").invoke(null);
    } catch (ReflectiveOperationException e) {
      return false;
    }
  }

  static String fmt(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }
}

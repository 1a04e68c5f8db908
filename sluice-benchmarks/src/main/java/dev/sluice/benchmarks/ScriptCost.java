package dev.sluice.benchmarks;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.redis.internal.RedisPlan;
import dev.sluice.redis.internal.RedisScript;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What each algorithm's script costs the Redis server, against {@code return 1}: every script's
 * acquire run by {@code redis-benchmark} (client throughput) and timed by the server itself
 * ({@code INFO commandstats}, microseconds per call, which the load of other processes on the
 * client side does not enter). Sends exactly the body and ARGV the limiter sends ({@link RedisScript},
 * {@link RedisPlan}, public in sluice-redis's unexported {@code dev.sluice.redis.internal}, which
 * this class path tool reads); run by {@code sluice-benchmarks/script-cost.sh}
 * against a private server, because it resets the server's statistics.
 *
 * <p>Two loads per script: {@code allowed} (every acquire admitted, so the state is read and
 * written) and {@code refused} (every acquire refused after the first, so it is only read).
 *
 * <p>Both timings move with the machine's load. With {@code --callgrind} the script runs the server
 * under valgrind's callgrind and this class also reports the server's instructions per call
 * ({@code callgrind_control} zeroes the counts before a run and dumps them after): a count that is
 * the same on a busy machine as on a quiet one, for comparing scripts and trims.
 */
public final class ScriptCost {
  private static final Pattern RPS = Pattern.compile("([0-9.]+) requests per second");
  private static final Pattern USEC = Pattern.compile("cmdstat_evalsha:calls=(\\d+),usec=(\\d+),usec_per_call=([0-9.]+)");
  private static final Duration HOUR = Duration.ofHours(1);

  private ScriptCost() {}

  /** {@code ScriptCost PORT [REQUESTS] [CLIENTS]}; {@code CALLGRIND_PID} and {@code CALLGRIND_DIR} when under callgrind. */
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    String callgrind = System.getenv("CALLGRIND_PID");
    int requests = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
    int clients = args.length > 2 ? Integer.parseInt(args[2]) : 16;
    RedisClient client = RedisClient.create("redis://127.0.0.1:" + port);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      RedisCommands<String, String> redis = c.sync();
      String trivial = redis.scriptLoad("return 1");
      System.out.printf(Locale.ROOT, "load average: %s%n", loadAverage());
      System.out.printf(Locale.ROOT, "%-16s %-8s %12s %8s %10s %8s %12s %8s%n", "script", "load", "req/s", "vs r1", "us/call",
          "vs r1", "instr/call", "vs r1");
      // return 1 receives what a token bucket's acquire receives, so the difference is the script's work
      List<String> typical = List.of(RedisPlan.of(policies().get(2)[1]).argv("a", "", 1, 0, "0", 0));
      Row base = run(redis, port, requests, clients, callgrind, trivial, List.of("sluice:{cost:trivial}"), typical);
      print("return 1", "", base, base);
      for (Policy[] loads : policies()) {
        for (int i = 0; i < 2; i++) {
          RedisPlan plan = RedisPlan.of(loads[i]);
          redis.scriptLoad(plan.script.body);
          String key = RedisPlan.storedKey(loads[i], "cost:" + i);
          redis.del(key);
          List<String> argv = List.of(plan.argv("a", "", 1, 0, "0", 0));
          redis.evalsha(plan.script.sha, io.lettuce.core.ScriptOutputType.MULTI, new String[] {key}, argv.toArray(String[]::new));
          Row row = run(redis, port, requests, clients, callgrind, plan.script.sha, List.of(key), argv);
          print(plan.script.name().toLowerCase(Locale.ROOT), i == 0 ? "allowed" : "refused", row, base);
        }
      }
      System.out.printf(Locale.ROOT, "load average: %s%n", loadAverage());
    } finally {
      client.shutdown();
    }
  }

  /** For each algorithm: a policy that admits every acquire of the run, and one that refuses all but the first. */
  private static List<Policy[]> policies() {
    long huge = 1_000_000;
    return List.of(
        new Policy[] {Policy.fixedWindow("cost-fw", huge, HOUR), Policy.fixedWindow("cost-fw-r", 1, HOUR)},
        new Policy[] {Policy.slidingWindow("cost-sw", huge, HOUR), Policy.slidingWindow("cost-sw-r", 1, HOUR)},
        new Policy[] {Policy.tokenBucket("cost-tb", 1_000_000, 1_000_000, Duration.ofSeconds(1)), Policy.tokenBucket("cost-tb-r", 1, 1, HOUR)},
        new Policy[] {Policy.gcra("cost-gcra", 1_000_000, Duration.ofSeconds(1), 1_000_000), Policy.gcra("cost-gcra-r", 1, HOUR, 1)},
        new Policy[] {Policy.slidingLog("cost-sl", 1_000, Duration.ofMillis(1)), Policy.slidingLog("cost-sl-r", 1, HOUR)});
  }

  record Row(double requestsPerSecond, double micros, double instructions) {}

  private static Row run(RedisCommands<String, String> redis, int port, int requests, int clients, String callgrind,
      String sha, List<String> keys, List<String> argv) throws IOException, InterruptedException {
    redis.configResetstat();
    if (callgrind != null) {
      exec(List.of("callgrind_control", "-z", callgrind));
    }
    List<String> cmd = new ArrayList<>(List.of("redis-benchmark", "-p", Integer.toString(port), "-n",
        Integer.toString(requests), "-c", Integer.toString(clients), "-q", "evalsha", sha, Integer.toString(keys.size())));
    cmd.addAll(keys);
    cmd.addAll(argv);
    String out = exec(cmd);
    Matcher rps = RPS.matcher(out);
    Matcher usec = USEC.matcher(redis.info("commandstats"));
    if (!rps.find() || !usec.find()) {
      throw new IllegalStateException("no figures in: " + out);
    }
    double instructions = callgrind == null ? Double.NaN : (double) instructionsSinceZero(callgrind) / requests;
    return new Row(Double.parseDouble(rps.group(1)), Double.parseDouble(usec.group(3)), instructions);
  }

  /** The server's instructions since the last zeroing: a fresh dump, totalled by callgrind_annotate. */
  private static long instructionsSinceZero(String pid) throws IOException, InterruptedException {
    java.nio.file.Path dir = java.nio.file.Path.of(System.getenv("CALLGRIND_DIR"));
    exec(List.of("callgrind_control", "-d", pid));
    java.nio.file.Path dump;
    try (var files = java.nio.file.Files.list(dir)) {
      dump = files.filter(f -> f.getFileName().toString().startsWith("callgrind.out."))
          .max(java.util.Comparator.comparingLong(f -> f.toFile().lastModified())).orElseThrow();
    }
    Matcher total = Pattern.compile("([0-9,]+) +\\(100.0%\\) +PROGRAM TOTALS").matcher(exec(List.of("callgrind_annotate", dump.toString())));
    java.nio.file.Files.delete(dump);
    if (!total.find()) {
      throw new IllegalStateException("no PROGRAM TOTALS in the callgrind dump " + dump);
    }
    return Long.parseLong(total.group(1).replace(",", ""));
  }

  private static String exec(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    StringBuilder out = new StringBuilder();
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        out.append(line).append('\n');
      }
    }
    if (p.waitFor() != 0) {
      throw new IllegalStateException(cmd.get(0) + " failed: " + out);
    }
    return out.toString();
  }

  private static void print(String script, String load, Row row, Row base) {
    System.out.printf(Locale.ROOT, "%-16s %-8s %12.0f %7.2fx %10.2f %7.2fx %12.0f %7.2fx%n", script, load,
        row.requestsPerSecond(), base.requestsPerSecond() / row.requestsPerSecond(), row.micros(), row.micros() / base.micros(),
        row.instructions(), row.instructions() / base.instructions());
  }

  private static String loadAverage() throws IOException {
    return new String(java.nio.file.Files.readAllBytes(java.nio.file.Path.of("/proc/loadavg")), StandardCharsets.UTF_8).trim();
  }
}

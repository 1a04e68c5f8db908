package dev.sluice.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Collection;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link RedisClientsBenchmark} once at 16 threads (one fork, 2 warm-up iterations of 1 s, 3
 * measured of 1 s: {@code -f 1 -wi 2 -w 1s -i 3 -r 1s -t 16}) and prints a markdown table per key
 * count: each client's Sluice and Bucket4j figures, Sluice / Bucket4j on that client, Sluice on it /
 * Sluice on Lettuce, with {@code /proc/loadavg} before and after. Arguments: JMH's {@code -p} style
 * overrides are not taken; set {@code SLUICE_REDIS_URL} for another server.
 */
public final class RedisClientsRun {
  private RedisClientsRun() {}

  public static void main(String[] args) throws Exception {
    String before = load();
    Instant start = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    Collection<RunResult> results = new Runner(new OptionsBuilder()
        .include(RedisClientsBenchmark.class.getName() + "\\.")
        .forks(1).warmupIterations(2).warmupTime(TimeValue.seconds(1))
        .measurementIterations(3).measurementTime(TimeValue.seconds(1)).threads(16)
        .build()).run();
    String after = load();
    Map<String, double[]> score = new HashMap<>(); // "sluice jedis 1" -> {score, error, min, max}
    for (RunResult r : results) {
      String bench = r.getParams().getBenchmark();
      bench = bench.substring(bench.lastIndexOf('.') + 1);
      String key = bench + " " + r.getParams().getParam("client") + " " + r.getParams().getParam("keys");
      double min = Double.MAX_VALUE;
      double max = 0;
      for (var it : r.getBenchmarkResults().iterator().next().getIterationResults()) {
        min = Math.min(min, it.getPrimaryResult().getScore());
        max = Math.max(max, it.getPrimaryResult().getScore());
      }
      score.put(key, new double[] {r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreError(), min, max});
    }
    StringBuilder md = new StringBuilder();
    md.append("Run ").append(start).append(" to ").append(Instant.now().truncatedTo(ChronoUnit.SECONDS))
        .append(", ").append(Runtime.getRuntime().availableProcessors()).append(" cores, server ").append(RedisFixture.URL)
        .append(".\nLoad (`/proc/loadavg`) before: `").append(before).append("`; after: `").append(after).append("`.\n");
    for (String keys : new String[] {"1", "10000"}) {
      md.append("\n").append("1".equals(keys) ? "One hot key" : "10,000 keys drawn uniformly").append(", 16 threads:\n\n")
          .append("| client | Sluice (ops/s) ± 99.9 % CI | range | Bucket4j (ops/s) ± 99.9 % CI | range | Sluice / Bucket4j (range) | Sluice / Sluice on Lettuce |\n")
          .append("|---|---:|---:|---:|---:|---:|---:|\n");
      double[] lettuce = score.get("sluice lettuce " + keys);
      for (String client : RedisClientsFixture.CLIENTS) {
        double[] s = score.get("sluice " + client + " " + keys);
        double[] b = score.get("bucket4j " + client + " " + keys);
        if (s == null || b == null) {
          md.append("| ").append(client).append(" | not measured | | | | | |\n");
          continue;
        }
        md.append("| ").append(client).append(" | ").append(k(s[0])).append(" ± ").append(k(s[1])).append(" | ")
            .append(k(s[2])).append(" – ").append(k(s[3])).append(" | ").append(k(b[0])).append(" ± ").append(k(b[1]))
            .append(" | ").append(k(b[2])).append(" – ").append(k(b[3])).append(" | ")
            .append(x(s[0] / b[0])).append(" (").append(x(s[2] / b[3])).append("–").append(x(s[3] / b[2])).append(") | ")
            .append(lettuce == null ? "-" : x(s[0] / lettuce[0])).append(" |\n");
      }
    }
    System.out.println();
    System.out.println(md);
    if (args.length == 2 && "--out".equals(args[0])) {
      Files.writeString(Path.of(args[1]), md.toString());
    }
  }

  private static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).strip();
    } catch (Exception e) {
      return "unknown (" + e + ")";
    }
  }

  private static String k(double v) {
    return String.format(Locale.ROOT, "%.1f k", v / 1000);
  }

  private static String x(double v) {
    return String.format(Locale.ROOT, "%.2fx", v);
  }
}

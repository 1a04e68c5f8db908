package dev.sluice.server;

import dev.sluice.Policy;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "simulate", mixinStandardHelpOptions = true,
    description = {"Replays a traffic pattern through every algorithm and charts admitted versus refused over time (PNG).",
        "Every algorithm gets the same numbers (limit per window) and runs on the memory tier in simulated time: fast and deterministic."})
final class SimulateCommand implements Callable<Integer> {
  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Option(names = "--pattern", defaultValue = "boundary", paramLabel = "PATTERN",
      description = "steady, bursty, boundary (a spike straddling the window boundary), spray (many distinct keys) or llm "
          + "(cost-based: reserve max_tokens, use less; without and with settlement). Default: ${DEFAULT-VALUE}.")
  String pattern;

  @Option(names = "--limit", defaultValue = "100", paramLabel = "N", description = "Permits per window (bucket capacity, GCRA burst). Default: ${DEFAULT-VALUE}.")
  long limit;

  @Option(names = "--window", defaultValue = "1s", paramLabel = "DURATION", description = "Window (refill period, GCRA period). Default: ${DEFAULT-VALUE}.")
  String window;

  @Option(names = "--duration", paramLabel = "DURATION", description = "Simulated time. Default: 3 windows (boundary, spray), 5 (steady), 6 (bursty).")
  String duration;

  @Option(names = "--bin", paramLabel = "DURATION", description = "Chart bin width. Default: 1/40 of the window.")
  String bin;

  @Option(names = "--keys", defaultValue = "20000", paramLabel = "N", description = "spray: distinct keys sprayed. Default: ${DEFAULT-VALUE}.")
  int keys;

  @Option(names = "--max-keys", defaultValue = "10000", paramLabel = "N", description = "Memory tier: most keys tracked. Default: ${DEFAULT-VALUE}.")
  int maxKeys;

  @Option(names = {"-o", "--out"}, paramLabel = "FILE", description = "PNG to write. Default: simulate-PATTERN.png.")
  Path out;

  @Option(names = "--width", defaultValue = "1100", paramLabel = "PIXELS", description = "Chart width. Default: ${DEFAULT-VALUE}.")
  int width;

  @Option(names = "--progress", negatable = true, paramLabel = "", description = "Progress bar on stderr. Default: on for runs of 200,000 requests or more.")
  Boolean progress;

  @Override public Integer call() throws Exception {
    if (System.getProperty("java.awt.headless") == null) {
      System.setProperty("java.awt.headless", "true"); // draws into an image; never needs a display
    }
    Traffic.Pattern p;
    try {
      p = Traffic.Pattern.valueOf(pattern.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--pattern '" + pattern + "' is unknown; use steady, bursty, boundary, spray or llm");
    }
    Duration w = Durations.parse("--window", window);
    List<Policy> policies = p == Traffic.Pattern.LLM ? Simulation.costPolicies(limit, w) : Simulation.policies(limit, w);
    long windowMicros = micros(w);
    long durationMicros = duration != null ? micros(Durations.parse("--duration", duration)) : windowMicros * switch (p) {
      case STEADY, LLM -> 5;
      case BURSTY -> 6;
      default -> 3;
    };
    long binMicros = bin != null ? micros(Durations.parse("--bin", bin)) : Math.max(1, windowMicros / 40);
    if (durationMicros < 1 || binMicros < 1 || durationMicros / binMicros > 100_000) {
      throw new IllegalArgumentException("--duration " + Durations.format(durationMicros) + " over --bin " + Durations.format(binMicros)
          + " is not 1 to 100000 bins; choose a wider bin or a shorter duration");
    }
    if (keys < 1 || keys > 10_000_000) {
      throw new IllegalArgumentException("--keys " + keys + " is out of range; use 1 to 10000000");
    }
    Traffic traffic = Traffic.of(p, limit, windowMicros, durationMicros, keys);
    if (traffic.size() > 50_000_000) {
      throw new IllegalArgumentException("the pattern makes " + traffic.size() + " requests; lower --limit, --keys or --duration");
    }
    long total = (long) traffic.size() * policies.size();
    PrintWriter err = spec.commandLine().getErr();
    ProgressBar bar = new ProgressBar(err, "simulating", total, progress != null ? progress : total >= 200_000);
    if (maxKeys < 1) {
      throw new IllegalArgumentException("--max-keys " + maxKeys + " is not positive; it must be at least 1");
    }
    List<Simulation.Result> results = Simulation.run(traffic, policies, binMicros,
        (policy, ticker) -> dev.sluice.memory.MemoryRateLimiter.builder(policy).ticker(ticker).maxKeys(maxKeys).build(), bar, Simulation.SETTLING);
    Path png = out != null ? out : Path.of("simulate-" + p.id() + ".png");
    String subtitle = p == Traffic.Pattern.LLM
        ? p.description + "; " + traffic.size() + " calls reserving " + traffic.estimate + " each; dashed lines: window boundaries\n"
            + "sliding window of " + limit + " tokens per " + Durations.format(windowMicros) + "; green: tokens used by admitted calls,"
            + " red: tokens of refused calls, per " + Durations.format(binMicros)
        : p.description + "; " + traffic.size() + " requests; dashed lines: window boundaries\nevery algorithm: limit " + limit + " per " + Durations.format(windowMicros)
        + " (bucket capacity " + limit + " refilled " + limit + " per " + Durations.format(windowMicros) + ", GCRA burst " + limit
        + "); green: admitted, red: refused, per " + Durations.format(binMicros);
    SimulationChart.write(png, "sluice simulate --pattern " + p.id(), subtitle, results, binMicros, windowMicros,
        durationMicros, width);
    PrintWriter out = spec.commandLine().getOut();
    out.print(table(p, traffic, results, limit, windowMicros));
    out.println("chart: " + png);
    out.flush();
    return 0;
  }

  static String table(Traffic.Pattern p, Traffic traffic, List<Simulation.Result> results, long limit, long windowMicros) {
    String w = Durations.format(windowMicros);
    String w5 = Durations.format(windowMicros / 5);
    StringBuilder b = new StringBuilder();
    b.append("pattern ").append(p.id()).append(": ").append(traffic.size()).append(" requests over ")
        .append(Durations.format(traffic.durationMicros)).append(", ").append(traffic.keyNames.length)
        .append(traffic.keyNames.length == 1 ? " key" : " keys").append(", limit ").append(limit).append(" per ").append(w).append('\n');
    String head = String.format("%-15s %9s %9s %9s %15s %15s%n", "algorithm", "offered", "admitted", "refused",
        "max in any " + w, "max in any " + w5);
    b.append(head);
    for (Simulation.Result r : results) {
      b.append(String.format("%-15s %9d %9d %9d %15d %15d%n", r.policy().name(), r.admitted() + r.refused(), r.admitted(),
          r.refused(), r.mostAdmittedWithin(windowMicros), r.mostAdmittedWithin(windowMicros / 5)));
    }
    if (p == Traffic.Pattern.LLM) {
      for (Simulation.Result r : results) {
        b.append(String.format("%-15s used %d tokens, charged %d (estimate drift %+d); used in any %s at most %d of %d%n",
            r.policy().name(), r.used(), r.charged(), r.charged() - r.used(), w,
            mostUsedWithin(traffic, r, windowMicros), limit));
      }
    }
    long tableFull = results.stream().mapToLong(Simulation.Result::refusedKeyTableFull).sum();
    if (tableFull > 0) {
      b.append("(").append(tableFull).append(" of the refusals were 'key table full': new keys refused, tracked keys kept)\n");
    }
    return b.toString();
  }

  /** The most tokens the admitted calls of {@code r} used within any span of {@code spanMicros} (LLM). */
  private static long mostUsedWithin(Traffic traffic, Simulation.Result r, long spanMicros) {
    long[] at = r.admittedTimes();
    long[] cost = new long[at.length];
    for (int i = 0, j = 0; i < traffic.size() && j < at.length; i++) {
      if (traffic.times[i] == at[j]) {
        cost[j++] = traffic.cost(i);
      }
    }
    long best = 0;
    long sum = 0;
    for (int hi = 0, lo = 0; hi < at.length; hi++) {
      sum += cost[hi];
      while (at[hi] - at[lo] >= spanMicros) {
        sum -= cost[lo++];
      }
      best = Math.max(best, sum);
    }
    return best;
  }

  private static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }
}

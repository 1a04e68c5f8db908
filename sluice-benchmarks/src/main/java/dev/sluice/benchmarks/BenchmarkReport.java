package dev.sluice.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs a short version of every benchmark in one process and writes {@code docs/benchmarks.md}: the
 * machine, the load, the command, every figure with its error, and each ratio against the baselines
 * measured in the same run. Started by {@code sluice-benchmarks/run-benchmarks.sh}; never by the build.
 *
 * <p>Arguments: {@code --out FILE} (the markdown), {@code --results DIR} (one JMH JSON file per
 * suite), {@code --command TEXT} (how it was started, for the report), {@code --quick} (one short
 * iteration each, to try the script), {@code --only a,b} (suites: memory, keyed, probes, heap,
 * redis, postgres).
 *
 * <p>This file is over 500 lines because it writes one document, section by section; it is a tool of
 * the benchmark module, never shipped.
 */
public final class BenchmarkReport {
  private final Map<String, String> opts;
  private final boolean quick;
  private final Path resultsDir;
  private final List<String> only;
  private final StringBuilder md = new StringBuilder();
  private final List<String[]> targets = new ArrayList<>();
  private final List<String> loadSamples = new ArrayList<>();

  private BenchmarkReport(Map<String, String> opts) {
    this.opts = opts;
    this.quick = opts.containsKey("quick");
    this.resultsDir = Path.of(opts.getOrDefault("results", "sluice-benchmarks/target/results"));
    this.only = opts.containsKey("only") ? List.of(opts.get("only").split(",")) : List.of();
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument '" + a + "'");
      }
      String name = a.substring(2);
      if (name.equals("quick")) {
        opts.put(name, "true");
      } else {
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("option --" + name + " needs a value");
        }
        opts.put(name, args[++i]);
      }
    }
    new BenchmarkReport(opts).run();
  }

  private boolean wanted(String suite) {
    return only.isEmpty() || only.contains(suite);
  }

  // -----------------------------------------------------------------------------------------------
  // Running
  // -----------------------------------------------------------------------------------------------

  /** The short settings every suite shares: one fork, 2 x 1 s warm-up, 3 x 1 s measurement. */
  ChainedOptionsBuilder shortOptions(String include, int threads, String suite) {
    ChainedOptionsBuilder b = new OptionsBuilder()
        .include(include)
        .forks(1)
        .threads(threads)
        .timeUnit(TimeUnit.SECONDS)
        .addProfiler(GCProfiler.class)
        .resultFormat(ResultFormatType.JSON)
        .result(resultsDir.resolve(suite + "-t" + threads + ".json").toString())
        .shouldFailOnError(true);
    if (quick) {
      b.warmupIterations(1).warmupTime(TimeValue.milliseconds(300)).measurementIterations(2).measurementTime(TimeValue.milliseconds(300));
    } else {
      b.warmupIterations(2).warmupTime(TimeValue.seconds(1)).measurementIterations(3).measurementTime(TimeValue.seconds(1));
    }
    return b;
  }

  /** The short settings as a command line, for the report. */
  String shortFlags() {
    return quick ? "-f 1 -wi 1 -w 300ms -i 2 -r 300ms -prof gc" : "-f 1 -wi 2 -w 1s -i 3 -r 1s -prof gc";
  }

  Results runJmh(String include, int threads, String suite) throws RunnerException {
    sampleLoad("before " + suite + " t=" + threads);
    Collection<RunResult> rs = new Runner(shortOptions(include, threads, suite).build()).run();
    sampleLoad("after " + suite + " t=" + threads);
    return new Results(rs);
  }

  void sampleLoad(String when) {
    try {
      String avg = Files.readString(Path.of("/proc/loadavg")).trim();
      loadSamples.add(Instant.now().truncatedTo(ChronoUnit.SECONDS) + " " + when + ": " + avg);
    } catch (IOException e) {
      loadSamples.add(when + ": load unknown (" + e.getMessage() + ")");
    }
  }

  /** One measured figure. */
  record Figure(String benchmark, Map<String, String> params, int threads, double score, double error,
                double min, double max, String unit, double allocPerOp, double allocError) {

    String method() {
      return benchmark.substring(benchmark.lastIndexOf('.') + 1);
    }

    String param(String name) {
      return params.getOrDefault(name, "");
    }

    String scoreText() {
      return fmtScore(score) + " ± " + fmtScore(Double.isNaN(error) ? 0 : error);
    }

    String rangeText() {
      return fmtScore(min) + " – " + fmtScore(max);
    }

    String allocText() {
      if (Double.isNaN(allocPerOp)) {
        return "n/a";
      }
      return String.format(Locale.ROOT, "%.1f", allocPerOp < 0.05 ? 0.0 : allocPerOp);
    }
  }

  /** The figures of one JMH run. */
  static final class Results {
    final List<Figure> figures = new ArrayList<>();

    Results(Collection<RunResult> rs) {
      for (RunResult r : rs) {
        Map<String, String> params = new LinkedHashMap<>();
        for (String k : r.getParams().getParamsKeys()) {
          params.put(k, r.getParams().getParam(k));
        }
        Result<?> p = r.getPrimaryResult();
        double min = p.getStatistics().getMin();
        double max = p.getStatistics().getMax();
        Result<?> alloc = r.getSecondaryResults().get("gc.alloc.rate.norm");
        figures.add(new Figure(r.getParams().getBenchmark(), params, r.getParams().getThreads(),
            p.getScore(), p.getScoreError(), min, max, p.getScoreUnit(),
            alloc == null ? Double.NaN : alloc.getScore(), alloc == null ? Double.NaN : alloc.getScoreError()));
      }
    }

    Figure find(String method, String paramName, String paramValue) {
      for (Figure f : figures) {
        if (f.method().equals(method) && (paramName == null || paramValue.equals(f.param(paramName)))) {
          return f;
        }
      }
      return null;
    }
  }

  // -----------------------------------------------------------------------------------------------
  // Formatting
  // -----------------------------------------------------------------------------------------------

  static String fmtScore(double v) {
    double a = Math.abs(v);
    if (a >= 1e6) {
      return String.format(Locale.ROOT, "%.2f M", v / 1e6);
    }
    if (a >= 1e3) {
      return String.format(Locale.ROOT, "%.1f k", v / 1e3);
    }
    return String.format(Locale.ROOT, "%.1f", v);
  }

  static String ratio(Figure a, Figure b) {
    if (a == null || b == null || b.score <= 0) {
      return "n/a";
    }
    double r = a.score / b.score;
    double lo = b.max > 0 ? a.min / b.max : Double.NaN;
    double hi = b.min > 0 ? a.max / b.min : Double.NaN;
    return String.format(Locale.ROOT, "%.2fx (%.2f–%.2f)", r, lo, hi);
  }

  static double ratioValue(Figure a, Figure b) {
    return a == null || b == null || b.score <= 0 ? Double.NaN : a.score / b.score;
  }

  /**
   * A hand-written section ({@code analysis.md}, the results of a benchmark run by hand): read from the
   * source tree when run from the repository root (so it can be edited while a run is in progress),
   * else from the jar.
   */
  private void handWritten(String name) throws java.io.IOException {
    Path source = Path.of("sluice-benchmarks/src/main/resources/dev/sluice/benchmarks/" + name);
    if (Files.isReadable(source)) {
      md.append(Files.readString(source)).append('\n');
    } else {
      try (InputStream in = BenchmarkReport.class.getResourceAsStream(name)) {
        if (in != null) {
          md.append(new String(in.readAllBytes(), StandardCharsets.UTF_8)).append('\n');
        }
      }
    }
  }

  void line(String s) {
    md.append(s).append('\n');
  }

  void target(String what, String goal, String measured, boolean met) {
    targets.add(new String[] {what, goal, measured, met ? "met" : "**missed**"});
  }

  void figureTable(List<Figure> figs, String... paramNames) {
    StringBuilder h = new StringBuilder("| benchmark |");
    StringBuilder sep = new StringBuilder("|---|");
    for (String p : paramNames) {
      h.append(' ').append(p).append(" |");
      sep.append("---|");
    }
    h.append(" threads | score (ops/s) ± 99.9 % CI | iteration range | B/op |");
    sep.append("---:|---:|---:|---:|");
    line(h.toString());
    line(sep.toString());
    for (Figure f : figs) {
      StringBuilder row = new StringBuilder("| `").append(f.method()).append("` |");
      for (String p : paramNames) {
        row.append(' ').append(f.param(p)).append(" |");
      }
      row.append(' ').append(f.threads()).append(" | ").append(f.scoreText()).append(" | ")
          .append(f.rangeText()).append(" | ").append(f.allocText()).append(" |");
      line(row.toString());
    }
    line("");
  }

  // -----------------------------------------------------------------------------------------------
  // Suites
  // -----------------------------------------------------------------------------------------------

  void run() throws Exception {
    Files.createDirectories(resultsDir);
    StringBuilder body = new StringBuilder();
    StringBuilder saved = new StringBuilder();
    Instant start = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    sampleLoad("start");

    if (wanted("memory")) {
      memorySuite();
    }
    if (wanted("keyed")) {
      keyedSuite();
    }
    if (wanted("heap")) {
      heapSuite();
    }
    if (wanted("probes")) {
      probesSuite();
    }
    if (wanted("redis")) {
      RemoteSuites.redis(this);
      // Run by hand (RedisClientsRun: every Redis client beside Bucket4j's proxy managers); its last
      // results are kept in a hand-written section, so a regeneration keeps them in place.
      handWritten("redis-clients.md");
    }
    if (wanted("postgres")) {
      RemoteSuites.postgres(this);
    }
    sampleLoad("end");
    body.append(md);
    md.setLength(0);

    line("# Sluice benchmarks");
    line("");
    line("Generated by `sluice-benchmarks/run-benchmarks.sh` on " + start + " (finished "
        + Instant.now().truncatedTo(ChronoUnit.SECONDS) + "). Every ratio compares figures measured in this one run,");
    line("on this machine, under the same load. The runs are short (" + shortFlags() + "), so the 99.9 % confidence");
    line("intervals JMH reports from three iterations are wide; the iteration range (slowest – fastest 1 s iteration) is");
    line("given too, and each ratio is followed by its worst–best range (slowest of one over fastest of the other).");
    line("The machine is shared with other builds: read the load below before reading any figure.");
    line("");
    line("## Machine");
    line("");
    machine();
    line("");
    line("Command: `" + opts.getOrDefault("command", "java -cp benchmarks.jar dev.sluice.benchmarks.BenchmarkReport") + "`");
    line("");
    line("Each benchmark's own run command is in its javadoc (`sluice-benchmarks/src/main/java/dev/sluice/benchmarks/`);");
    line("the JSON of every suite is in `" + resultsDir + "`.");
    line("");
    line("## Targets");
    line("");
    line("| target | goal | measured | verdict |");
    line("|---|---|---|---|");
    for (String[] t : targets) {
      line("| " + t[0] + " | " + t[1] + " | " + t[2] + " | " + t[3] + " |");
    }
    line("");
    handWritten("analysis.md");
    saved.append(md);
    md.setLength(0);
    line("## Load during the run (`/proc/loadavg`: 1, 5, 15 min averages, runnable/total tasks)");
    line("");
    line("```");
    for (String s : loadSamples) {
      line(s);
    }
    line("```");
    String loadText = md.toString();

    Path out = Path.of(opts.getOrDefault("out", "docs/benchmarks.md"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, saved + body.toString() + loadText);
    System.out.println("wrote " + out.toAbsolutePath());
  }

  void machine() throws IOException, InterruptedException {
    line("| | |");
    line("|---|---|");
    line("| processors (`nproc`) | " + Runtime.getRuntime().availableProcessors() + " |");
    line("| CPU | " + cpuModel() + " |");
    line("| memory | " + memTotal() + " |");
    line("| JVM | " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + " (" + System.getProperty("java.vendor") + ") |");
    line("| OS | " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " |");
    line("");
    line("`java -version`:");
    line("");
    line("```");
    String java = ProcessHandle.current().info().command().orElse("java");
    Process p = new ProcessBuilder(java, "-version").redirectErrorStream(true).start();
    try (InputStream in = p.getInputStream()) {
      md.append(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    p.waitFor();
    line("```");
  }

  static String cpuModel() {
    try {
      for (String l : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (l.startsWith("model name")) {
          return l.substring(l.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException e) {
      return "unknown (" + e.getMessage() + ")";
    }
    return "unknown";
  }

  static String memTotal() {
    try {
      for (String l : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (l.startsWith("MemTotal")) {
          return l.substring(l.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException e) {
      return "unknown";
    }
    return "unknown";
  }

  // --- memory, single key -------------------------------------------------------------------------

  static final String[] SINGLE_KEY_BASELINES = {"bucket4jLockFree", "bucket4jSynchronized", "resilience4j", "guava"};

  void memorySuite() throws RunnerException {
    line("## Memory, one hot key (`SingleKeyBenchmark`, `ClockCeilingBenchmark`)");
    line("");
    line("All limiters are token buckets of the same rate. `ALLOWED`: capacity and refill 10^9/s, never empty;");
    line("`REFUSED`: capacity 1, one permit an hour, every measured check refused. Each method returns only");
    line("whether the check passed: `sluice` through `tryConsume(key, 1)`, Sluice's verdict-only call; `sluiceTryAcquire`");
    line("reads `tryAcquire(key).allowed()`; `sluiceDecision` returns Sluice's whole `Decision`.");
    line("`nanoTime` is one `System.nanoTime()` read: the ceiling of any limiter that reads a clock. B/op is");
    line("`gc.alloc.rate.norm` from `-prof gc`: bytes allocated per check.");
    line("");
    for (int threads : new int[] {1, 2}) {
      Results r = runJmh("dev.sluice.benchmarks.(SingleKeyBenchmark|ClockCeilingBenchmark)\\.", threads, "memory");
      line("### " + threads + (threads == 1 ? " thread" : " threads"));
      line("");
      figureTable(r.figures, "load");
      Figure ceiling = r.find("nanoTime", null, null);
      line("| load | Sluice | " + String.join(" | ", SINGLE_KEY_BASELINES) + " | clock ceiling |");
      line("|---|---:|---:|---:|---:|---:|---:|");
      for (String load : new String[] {"ALLOWED", "REFUSED"}) {
        Figure s = r.find("sluice", "load", load);
        StringBuilder row = new StringBuilder("| " + load + " | " + (s == null ? "n/a" : fmtScore(s.score) + "/s") + " |");
        for (String b : SINGLE_KEY_BASELINES) {
          row.append(' ').append(ratio(s, r.find(b, "load", load))).append(" |");
        }
        row.append(' ').append(ratio(s, ceiling)).append(" |");
        line(row.toString());
        double vsB4j = ratioValue(s, r.find("bucket4jLockFree", "load", load));
        double goal = threads == 1 ? 1.1 : 1.0;
        target("memory, one key, " + threads + "T, " + load + ": Sluice / Bucket4j lock-free", "≥ " + goal + "x",
            String.format(Locale.ROOT, "%.2fx", vsB4j), vsB4j >= goal);
        if (threads == 1) {
          double vsCeil = ratioValue(s, ceiling);
          target("memory, one key, 1T, " + load + ": Sluice / `System.nanoTime()` ceiling", "≥ 0.75",
              String.format(Locale.ROOT, "%.2f", vsCeil), vsCeil >= 0.75);
        }
        if (s != null) {
          target("memory, one key, " + threads + "T, " + load + ": bytes allocated per decision (`tryConsume`, the verdict only)",
              "0 B", s.allocText() + " B", s.allocPerOp < 0.05);
        }
      }
      line("");
      line("Ratios are Sluice's rate over the column's rate (above 1: Sluice is faster).");
      line("");
    }
  }

  // --- memory, keyed ------------------------------------------------------------------------------

  void keyedSuite() throws RunnerException {
    line("## Memory, 100,000 keys drawn uniformly (`KeyedBenchmark`)");
    line("");
    line("Sluice's `MemoryRateLimiter` (maxKeys 100,000) against a Caffeine cache (maximumSize 100,000,");
    line("expireAfterAccess 10 min) of Bucket4j lock-free buckets. Both are filled with every key first; every check");
    line("is allowed (capacity 10^6, one permit a second, each key charged 1,000 when filled, so no key ever becomes");
    line("reclaimable). `keyDrawOnly` is the cost of drawing the key alone (`ThreadLocalRandom` + array load).");
    line("");
    Results r = runJmh("dev.sluice.benchmarks.KeyedBenchmark\\.", 1, "keyed");
    figureTable(r.figures, "keys");
    Figure s = r.find("sluice", null, null);
    Figure c = r.find("caffeineOfBucket4j", null, null);
    line("Sluice / Caffeine-of-Bucket4j: " + ratio(s, c) + ".");
    line("");
    double v = ratioValue(s, c);
    target("memory, 100,000 keys, 1T: Sluice / Caffeine + Bucket4j", "≥ 2x", String.format(Locale.ROOT, "%.2fx", v), v >= 2);
  }

  // --- heap per key -------------------------------------------------------------------------------

  void heapSuite() throws IOException, InterruptedException {
    line("## Heap per tracked key (`HeapPerKey`)");
    line("");
    int n = 100_000;
    String java = ProcessHandle.current().info().command().orElse("java");
    List<String> cmd = List.of(java, "-Xms512m", "-Xmx512m", "-XX:+UseParallelGC", "-Djdk.attach.allowAttachSelf=true",
        "-cp", System.getProperty("java.class.path"), HeapPerKey.class.getName(), Integer.toString(n));
    sampleLoad("before heap");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out;
    try (InputStream in = p.getInputStream()) {
      out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    int rc = p.waitFor();
    line("Filled with " + n + " keys `user:0` … `user:99999` (6–10 Latin-1 characters: a `String` of 24 B plus its");
    line("`byte[]` of 24 B), created on the fly so the limiter holds the only reference. Two measures, both filled minus");
    line("empty, over " + n + ": used heap after `System.gc()` (`MemoryMXBean`, median of 3, ParallelGC, 512 MB heap) and");
    line("JOL's walk of the graph reachable from the limiter. Key strings are included in both.");
    line("");
    line("Command: `java -Xms512m -Xmx512m -XX:+UseParallelGC -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.HeapPerKey " + n + "`");
    line("");
    line("| limiter | bytes per key (MXBean) | bytes per key (JOL) |");
    line("|---|---:|---:|");
    Map<String, double[]> got = new LinkedHashMap<>();
    for (String l : out.split("\n")) {
      if (l.startsWith("HEAP ")) {
        String[] f = l.trim().split(" ");
        got.put(f[1], new double[] {Double.parseDouble(f[2]), Double.parseDouble(f[3])});
        line("| " + f[1] + " | " + f[2] + " | " + f[3] + " |");
      }
    }
    line("");
    if (rc != 0 || got.isEmpty()) {
      line("HeapPerKey failed (exit " + rc + "):");
      line("");
      line("```");
      line(out);
      line("```");
      target("memory, heap per tracked key", "≤ 150 B", "not measured", false);
      return;
    }
    double[] s = got.get("sluice");
    double[] c = got.get("caffeineOfBucket4j");
    if (s != null && c != null) {
      line(String.format(Locale.ROOT, "Sluice uses %.0f %% of the recipe's heap per key (JOL).", 100 * s[1] / c[1]));
      line("");
    }
    if (s != null) {
      target("memory, heap per tracked key (key included), JOL / MXBean", "≤ 150 B",
          String.format(Locale.ROOT, "%.0f B / %.0f B", s[1], s[0]), Math.max(s[0], s[1]) <= 150);
    }
  }

  // --- escape-analysis probes ---------------------------------------------------------------------

  void probesSuite() throws RunnerException {
    line("## Escape-analysis probes (`EscapeProbeBenchmark`)");
    line("");
    line("Objects of the shapes Sluice builds, created and read in the benchmark method itself (so fully inlined),");
    line("reading only a boolean. Non-zero B/op means this JVM's C2 does not scalar-replace that shape.");
    line("");
    Results r = runJmh("dev.sluice.benchmarks.EscapeProbeBenchmark\\.", 1, "probes");
    figureTable(r.figures);
    inliningDiagnosis();
  }

  /**
   * Why Sluice's decisions are (or are not) allocated: one run of {@code SingleKeyBenchmark.sluice}
   * with C2's inlining decisions printed (what the benchmark's compiled loop did with the call to
   * {@code RateLimiter.tryAcquire}), and one with {@code -XX:InlineSmallCode=20000}, which lets C2
   * inline callees already compiled to large code.
   */
  void inliningDiagnosis() throws RunnerException {
    line("### Does the caller inline Sluice's decision?");
    line("");
    Path log = resultsDir.resolve("inlining.log");
    sampleLoad("before inlining diagnosis");
    new Runner(shortOptions("dev.sluice.benchmarks.SingleKeyBenchmark.sluice$", 1, "inlining")
        .param("load", "REFUSED")
        .jvmArgsAppend("-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintCompilation", "-XX:+PrintInlining")
        .output(log.toString())
        .build()).run();
    Map<String, Integer> reasons = new LinkedHashMap<>();
    try {
      for (String l : Files.readAllLines(log)) {
        if (l.contains("@ ") && l.contains("dev.sluice.RateLimiter::tryAcquire (15 bytes)")) {
          String reason = l.substring(l.indexOf("(15 bytes)") + "(15 bytes)".length()).trim();
          reasons.merge(reason, 1, Integer::sum);
        }
      }
    } catch (IOException e) {
      reasons.put("log unreadable: " + e.getMessage(), 1);
    }
    line("C2's decisions (`-XX:+PrintInlining`, `load=REFUSED`, 1 thread) at the benchmark's call to");
    line("`RateLimiter.tryAcquire(String)` (full log: `" + log + "`):");
    line("");
    line("| inlining decision at the call site | times printed |");
    line("|---|---:|");
    reasons.forEach((k, v) -> line("| " + (k.isEmpty() ? "(none)" : k) + " | " + v + " |"));
    line("");
    Results forced = new Results(new Runner(shortOptions("dev.sluice.benchmarks.SingleKeyBenchmark.sluice$", 1, "inline-small-code")
        .jvmArgsAppend("-XX:InlineSmallCode=20000")
        .build()).run());
    sampleLoad("after inlining diagnosis");
    line("The same benchmark with `-XX:InlineSmallCode=20000` (C2 may then inline a callee already compiled to");
    line("up to 20,000 bytes of machine code, instead of 2,500 by default):");
    line("");
    figureTable(forced.figures, "load");
  }

  /** Runs a command, returning its output (stdout and stderr); a failure to start is reported as output. */
  String exec(String... cmd) throws InterruptedException {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out;
      try (InputStream in = p.getInputStream()) {
        out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      int rc = p.waitFor();
      return rc == 0 ? out : out + "\n(exit " + rc + ")";
    } catch (IOException e) {
      return "could not run " + cmd[0] + ": " + e.getMessage();
    }
  }

  /** Runs {@code mainClass} of this jar in a fresh JVM, returning its output. */
  String spawn(String mainClass, String... args) throws InterruptedException {
    String java = ProcessHandle.current().info().command().orElse("java");
    List<String> cmd = new ArrayList<>(List.of(java, "-Xmx1g", "-cp", System.getProperty("java.class.path"), mainClass));
    cmd.addAll(List.of(args));
    sampleLoad("before " + mainClass.substring(mainClass.lastIndexOf('.') + 1));
    return exec(cmd.toArray(new String[0]));
  }
}

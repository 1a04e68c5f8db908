package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import io.lettuce.core.RedisClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;

/**
 * Two JVMs on one private Redis, one on Lettuce (a second JVM running {@link #main}) and this one on
 * another client, 16 threads each on one key under every algorithm with the server's clock, limit
 * 1000: together they admit exactly the limit, and Redis counts (INFO commandstats) exactly one
 * EVALSHA per decision, with coalescing off ({@code maxBatch(1)}) so that every decision is a
 * command of its own. For the other clients' modules, through the test-jar.
 */
public final class CrossClientRun {
  public static final int THREADS = 16;
  public static final int CALLS_PER_THREAD = 250;
  public static final long LIMIT = 1000;
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private CrossClientRun() {}

  /** The policies both JVMs build, one per algorithm. */
  public static List<Policy> policies(String prefix) {
    Duration hour = Duration.ofHours(1);
    return List.of(Policy.fixedWindow(prefix + "-fw", LIMIT, hour), Policy.slidingWindow(prefix + "-sw", LIMIT, hour),
        Policy.tokenBucket(prefix + "-tb", LIMIT, 1, hour), Policy.gcra(prefix + "-gc", 1, hour, LIMIT),
        Policy.slidingLog(prefix + "-sl", LIMIT, hour));
  }

  /**
   * The run against {@code server}, this JVM's limiters built by {@code mine} (with {@code maxBatch(1)}
   * and a generous timeout: decisions, not latency, are under test); prints its figures.
   */
  public static void run(RedisServerProcess server, String label, Function<Policy, RateLimiter> mine) throws Exception {
    String prefix = "cross-" + UUID.randomUUID().toString().substring(0, 8);
    String key = "hot-key";
    List<Policy> policies = policies(prefix);
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-cp", cp, CrossClientRun.class.getName(), server.uri(), prefix, key)
        .redirectErrorStream(true).start();
    List<RateLimiter> limiters = new ArrayList<>();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      List<String> lines = new ArrayList<>();
      String line;
      while ((line = out.readLine()) != null && !line.equals("READY")) {
        lines.add(line);
      }
      assertThat(line).as("the Lettuce JVM started: %s", lines).isEqualTo("READY");
      for (Policy p : policies) {
        RateLimiter l = mine.apply(p);
        limiters.add(l);
        l.peek(key); // connected, scripts cached: ready to race
      }
      String before = commandStats(server);
      CountDownLatch go = new CountDownLatch(1);
      Writer in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
      in.write("GO\n");
      in.flush();
      go.countDown();
      long[] ours = hammer(limiters, key, go);
      String theirLine = null;
      while ((line = out.readLine()) != null) {
        if (line.startsWith("ADMITTED")) {
          theirLine = line;
          break;
        }
        lines.add(line);
      }
      assertThat(theirLine).as("the Lettuce JVM's admissions; its output: %s", lines).isNotNull();
      assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
      String after = commandStats(server);
      String[] theirs = theirLine.split(" ");
      for (int i = 0; i < policies.size(); i++) {
        long other = Long.parseLong(theirs[i + 1]);
        System.out.printf("cross-client %s %s: %s admitted %d, Lettuce %d, of %d attempts%n", label,
            policies.get(i).algorithm().id(), label, ours[i], other, 2 * THREADS * CALLS_PER_THREAD / policies.size());
        assertThat(ours[i] + other).as("admissions under %s", policies.get(i).algorithm().id()).isEqualTo(LIMIT);
        assertThat(ours[i]).as("%s took part", label).isPositive();
        assertThat(other).as("Lettuce took part").isPositive();
      }
      long decisions = 2L * THREADS * CALLS_PER_THREAD;
      long evalsha = calls(after, "evalsha") - calls(before, "evalsha");
      long eval = calls(after, "eval") - calls(before, "eval");
      System.out.printf("cross-client %s: %d decisions, %d EVALSHA, %d EVAL: %.4f EVALSHA per decision; every command's calls"
          + " (those the scripts run counted too): %s%n", label, decisions, evalsha, eval, (double) evalsha / decisions,
          deltas(before, after));
      assertThat(evalsha).as("EVALSHA calls (INFO commandstats) for %d decisions", decisions).isEqualTo(decisions);
      assertThat(eval).as("EVAL calls: every script was loaded before the race").isZero();
    } finally {
      limiters.forEach(l -> {
        if (l instanceof AutoCloseable c) {
          try {
            c.close();
          } catch (Exception ignored) {
            // the test's outcome is decided
          }
        }
      });
      child.destroyForcibly();
    }
  }

  private static long[] hammer(List<RateLimiter> limiters, String key, CountDownLatch go) throws InterruptedException {
    AtomicLongArray admitted = new AtomicLongArray(limiters.size());
    Thread[] threads = new Thread[THREADS];
    for (int t = 0; t < THREADS; t++) {
      threads[t] = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < CALLS_PER_THREAD; i++) {
          int a = i % limiters.size();
          if (limiters.get(a).tryAcquire(key).allowed()) {
            admitted.incrementAndGet(a);
          }
        }
      });
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    long[] out = new long[limiters.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = admitted.get(i);
    }
    return out;
  }

  private static String commandStats(RedisServerProcess server) throws Exception {
    return RedisServerProcess.output("redis-cli", "-p", Integer.toString(server.port), "info", "commandstats");
  }

  /** {@code cmdstat_<command>:calls=N} of an INFO commandstats reply, 0 when absent. */
  static long calls(String stats, String command) {
    for (String l : stats.split("\r?\n")) {
      if (l.startsWith("cmdstat_" + command + ":calls=")) {
        String n = l.substring(("cmdstat_" + command + ":calls=").length());
        return Long.parseLong(n.substring(0, n.indexOf(',')));
      }
    }
    return 0;
  }

  /** Every command whose calls grew between the two INFO commandstats replies, with how much. */
  private static String deltas(String before, String after) {
    StringBuilder b = new StringBuilder();
    for (String l : after.split("\r?\n")) {
      if (l.startsWith("cmdstat_")) {
        String command = l.substring("cmdstat_".length(), l.indexOf(':'));
        long d = calls(after, command) - calls(before, command);
        if (d > 0) {
          b.append(b.length() == 0 ? "" : ", ").append(command).append(' ').append(d);
        }
      }
    }
    return b.toString();
  }

  /** The Lettuce JVM: URL, policy prefix, key; prints READY, waits for GO, prints its admissions. */
  public static void main(String[] args) throws Exception {
    RedisClient client = RedisClient.create(args[0]);
    List<RateLimiter> limiters = new ArrayList<>();
    long[] result;
    try {
      for (Policy p : policies(args[1])) {
        RedisRateLimiter l = RedisRateLimiter.builder(p, client).timeout(TIMEOUT).maxBatch(1).build();
        limiters.add(l);
        l.peek(args[2]);
      }
      CountDownLatch go = new CountDownLatch(1);
      Thread opener = new Thread(() -> {
        try {
          if ("GO".equals(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine())) {
            go.countDown();
          }
        } catch (Exception e) {
          System.exit(3);
        }
      });
      opener.setDaemon(true);
      opener.start();
      System.out.println("READY");
      System.out.flush();
      result = hammer(limiters, args[2], go);
    } finally {
      for (RateLimiter l : limiters) {
        ((RedisRateLimiter) l).close();
      }
      client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    StringBuilder b = new StringBuilder("ADMITTED");
    for (long n : result) {
      b.append(' ').append(n);
    }
    System.out.println(b);
    System.out.flush();
    System.exit(0);
  }
}

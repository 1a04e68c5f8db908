package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Policy;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Two JVM processes with 16 threads each hammer one key of one policy, on the server's clock:
 * together they admit exactly the limit.
 */
class PostgresTwoProcessTest {
  static final int THREADS = 16;
  static final int PER_THREAD = 20;

  @Test
  void twoProcessesOnOneKeyAdmitExactlyTheLimit() throws Exception {
    PostgresTestSupport.requireServer();
    String table = PostgresTestSupport.tableName();
    String name = PostgresTestSupport.name("two-jvm");
    long limit = 300; // of 2 x 16 x 20 = 640 attempts
    HikariDataSource ds = warmPool(PostgresTestSupport.URL);
    try {
      JdbcRateLimiter.builder(Policy.fixedWindow(name, limit, Duration.ofHours(1)), ds).table(table).build().applySchema();
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
          PostgresTwoProcessTest.class.getName(), PostgresTestSupport.URL, table, name, Long.toString(limit))
          .redirectError(ProcessBuilder.Redirect.INHERIT).start();
      try {
        BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String ready = out.readLine();
        assertThat(ready).as("child process handshake").isEqualTo("READY");
        long startAt = System.currentTimeMillis() + 500;
        OutputStream go = child.getOutputStream();
        go.write(("GO " + startAt + "\n").getBytes(StandardCharsets.UTF_8));
        go.flush();
        long mine = hammer(ds, table, name, limit, startAt);
        String line = out.readLine();
        assertThat(child.waitFor(120, TimeUnit.SECONDS)).isTrue();
        long theirs = Long.parseLong(line.trim());
        System.err.printf("[two JVMs] this process admitted %d, the other %d, limit %d%n", mine, theirs, limit);
        assertThat(mine + theirs).as("admissions of both processes together").isEqualTo(limit);
        if (mine == 0 || theirs == 0) {
          // The sum is the assertion; an overlap-free run (one process far slower) proves less, so say so.
          System.err.println("*** two JVMs: one process admitted nothing; the processes barely overlapped on this run ***");
        }
      } finally {
        child.destroyForcibly();
      }
    } finally {
      PostgresTestSupport.drop(PostgresTestSupport.URL, table);
      ds.close();
    }
  }

  /** 16 threads released together, each trying PER_THREAD times; returns the admissions. */
  static long hammer(javax.sql.DataSource ds, String table, String name, long limit, long startAtMillis) throws Exception {
    Policy policy = Policy.fixedWindow(name, limit, Duration.ofHours(1));
    try (JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).table(table).timeout(Duration.ofSeconds(30)).build()) {
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Long>> fs = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        fs.add(pool.submit(() -> {
          start.await();
          long n = 0;
          for (int i = 0; i < PER_THREAD; i++) {
            var d = limiter.tryAcquire("the-hot-key");
            if (d.allowed()) {
              n++;
            } else if (d.reason() != dev.sluice.Reason.LIMIT_EXCEEDED) {
              throw new AssertionError("unexpected " + d);
            }
          }
          return n;
        }));
      }
      limiter.peek("warm-up"); // load and link the decision path before the race
      Thread.sleep(Math.max(0, startAtMillis - System.currentTimeMillis())); // both processes start together
      start.countDown();
      long total = 0;
      for (Future<Long> f : fs) {
        total += f.get(120, TimeUnit.SECONDS);
      }
      pool.shutdown();
      return total;
    }
  }

  /** A pool with all 16 connections open before the race. */
  static HikariDataSource warmPool(String url) throws Exception {
    HikariDataSource ds = PostgresTestSupport.pool(url, THREADS);
    List<java.sql.Connection> cs = new ArrayList<>();
    for (int i = 0; i < THREADS; i++) {
      cs.add(ds.getConnection());
    }
    for (java.sql.Connection c : cs) {
      c.close();
    }
    return ds;
  }

  /** The second process: args url, table, policy name, limit. Prints READY, waits for GO, prints its admissions. */
  public static void main(String[] args) throws Exception {
    try (HikariDataSource ds = warmPool(args[0])) {
      System.out.println("READY");
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String go = in.readLine();
      if (go == null || !go.startsWith("GO ")) {
        System.exit(2);
      }
      System.out.println(hammer(ds, args[1], args[2], Long.parseLong(args[3]), Long.parseLong(go.substring(3))));
      System.out.flush();
    }
  }
}

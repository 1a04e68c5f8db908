package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, "recovery needs no restart": after a fault on the PostgreSQL store every key of a
 * limiter decides on the store again within {@link #RECOVERY_MILLIS} of the store's return. The
 * faults, on a private server (never the shared one): every server process SIGKILLed and the server
 * started again, an immediate stop and a start, SIGSTOP and SIGCONT, and every backend of the
 * limiter's database terminated with {@code pg_terminate_backend}. The load: 16 synchronous threads
 * hammering one hot key (coalesced), asynchronous acquires kept in flight on it, and a cold key asked
 * by one thread every {@link #COLD_PERIOD_MILLIS}.
 *
 * <p>The store's return is the instant it accepts connections again: the start of the first
 * connection attempt that succeeds after a restart (attempts every millisecond), the moment every
 * process has been sent SIGCONT, the moment {@code pg_terminate_backend} returned. A key has
 * recovered when it has had a decision made by the store and no request for it made after that
 * instant got a failure-mode decision: its recovery time is the later of its first decision by the
 * store after the return and the start of its last request after the return that the failure mode
 * decided.
 *
 * <p>Run: {@code ./mvnw -B -q -pl sluice-jdbc -am verify -Dtest=PostgresRecoveryTest
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 40 s).
 */
class PostgresRecoveryTest {
  static final Duration DEADLINE = Duration.ofMillis(300);
  /** The bound: every key decides on the store again this soon after the store's return. */
  static final long RECOVERY_MILLIS = 100;
  /** How long each fault keeps the store away: long enough for any backoff to grow. */
  static final long OUTAGE_MILLIS = 2_000;
  static final int SYNC_THREADS = 16;
  static final int ASYNC_IN_FLIGHT = 64;
  static final long COLD_PERIOD_MILLIS = 10;

  enum Fault { SIGKILL_AND_START, STOP_AND_START, SIGSTOP_SIGCONT, TERMINATE_BACKENDS }

  @Test
  void everyKeyDecidesOnTheStoreWithin100MillisOfTheServersReturn() throws Exception {
    try (PostgresPrivateServer server = PostgresPrivateServer.start()) {
      try (Connection c = DriverManager.getConnection(server.url("postgres")); Statement s = c.createStatement()) {
        s.execute("CREATE DATABASE sluice");
      }
      HikariConfig cfg = new HikariConfig(); // as docs/postgresql.md configures it
      cfg.setJdbcUrl(server.url());
      cfg.setMaximumPoolSize(16);
      cfg.setInitializationFailTimeout(-1);
      cfg.setConnectionInitSql(PostgresDeadlineUnderLoadTest.STATEMENT_TIMEOUT);
      Policy policy = Policy.fixedWindow(PostgresTestSupport.name("recovery"), 1_000_000_000L, Duration.ofHours(1));
      List<String> report = new ArrayList<>();
      long worst = 0;
      try (HikariDataSource ds = new HikariDataSource(cfg);
           JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).table(PostgresTestSupport.tableName())
               .timeout(DEADLINE).build()) {
        limiter.applySchema();
        Load load = new Load(limiter);
        load.start();
        try {
          load.awaitRecovery(System.nanoTime(), 30_000);
          Thread.sleep(1_000);
          for (Fault fault : Fault.values()) {
            load.forget();
            long returned = inflict(fault, server);
            Recovery r = load.awaitRecovery(returned, 10_000);
            Thread.sleep(500); // later failures would still count
            r = load.recovery(returned);
            String line = String.format("%-19s hot sync %s, hot async %s, cold %s; load average %s", fault,
                r.hotSync, r.hotAsync, r.cold, loadAverage());
            report.add(line);
            System.err.println("[recovery] " + line);
            worst = Math.max(worst, r.worst());
          }
        } finally {
          load.stop();
        }
        assertThat(load.unexpected.get()).as("exceptions from decisions (never expected)").isNull();
      }
      assertThat(worst).as("the slowest key's recovery, in ms, after any fault:%n%s", String.join("\n", report))
          .isLessThanOrEqualTo(RECOVERY_MILLIS);
    }
  }

  /** Inflicts {@code fault}, holds it for {@link #OUTAGE_MILLIS}, ends it; returns the instant the store was back. */
  private static long inflict(Fault fault, PostgresPrivateServer server) throws Exception {
    switch (fault) {
      case SIGKILL_AND_START -> {
        signal("-KILL", serverProcesses(server));
        Thread.sleep(OUTAGE_MILLIS);
        return start(server);
      }
      case STOP_AND_START -> {
        server.stopServer();
        Thread.sleep(OUTAGE_MILLIS);
        return start(server);
      }
      case SIGSTOP_SIGCONT -> {
        List<String> pids = serverProcesses(server);
        signal("-STOP", pids);
        Thread.sleep(OUTAGE_MILLIS);
        signal("-CONT", serverProcesses(server));
        return System.nanoTime();
      }
      case TERMINATE_BACKENDS -> {
        try (Connection obs = DriverManager.getConnection(server.url("postgres")); Statement s = obs.createStatement()) {
          s.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'sluice'");
        }
        return System.nanoTime();
      }
      default -> throw new IllegalStateException(fault.toString());
    }
  }

  /** Starts the server; returns the start of the first connection attempt that succeeded (attempts every millisecond). */
  private static long start(PostgresPrivateServer server) throws Exception {
    AtomicReference<Long> accepted = new AtomicReference<>();
    Thread probe = new Thread(() -> {
      while (accepted.get() == null) {
        long t = System.nanoTime();
        try (Connection c = DriverManager.getConnection(server.url("postgres"))) {
          accepted.set(t);
        } catch (SQLException notYet) {
          try {
            Thread.sleep(1);
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }, "recovery-probe");
    probe.setDaemon(true);
    probe.start();
    server.startServer();
    probe.join(30_000);
    assertThat(accepted.get()).as("the server accepts connections within 30 s of pg_ctl start").isNotNull();
    return accepted.get();
  }

  /** The postmaster and every process it started. */
  private static List<String> serverProcesses(PostgresPrivateServer server) throws Exception {
    String pid = Files.readAllLines(java.nio.file.Path.of(server.data(), "postmaster.pid")).get(0).trim();
    List<String> pids = new ArrayList<>(List.of(pid));
    for (String p : new String(new ProcessBuilder("ps", "-o", "pid=", "--ppid", pid).start().getInputStream().readAllBytes())
        .split("\\s+")) {
      if (!p.isBlank()) {
        pids.add(p.trim());
      }
    }
    return pids;
  }

  /** One {@code kill} for all of {@code pids}, so that they are signalled together (a process that already exited is no error). */
  private static void signal(String signal, List<String> pids) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("kill", signal));
    cmd.addAll(pids);
    new ProcessBuilder(cmd).redirectErrorStream(true).start().waitFor();
  }

  private static String loadAverage() throws Exception {
    return Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim().split(" ", 4)[0];
  }

  /** One decision: when it was asked and answered, and whether the store made it. */
  private record Sample(long start, long end, boolean primary) { }

  /** One kind of caller's recovery after a return: its first decision by the store, its last failure-mode decision asked after the return. */
  private record KeyRecovery(long firstPrimaryMillis, long lastFailureAskedMillis, int failuresAfter) {
    long millis() {
      return Math.max(firstPrimaryMillis, lastFailureAskedMillis);
    }

    boolean recovered() {
      return firstPrimaryMillis >= 0;
    }

    @Override public String toString() {
      return !recovered() ? "not recovered" : String.format("%d ms (first by the store %d, last failure asked at %d, %d failures)",
          millis(), firstPrimaryMillis, lastFailureAskedMillis, failuresAfter);
    }
  }

  private record Recovery(KeyRecovery hotSync, KeyRecovery hotAsync, KeyRecovery cold) {
    boolean recovered() {
      return hotSync.recovered() && hotAsync.recovered() && cold.recovered();
    }

    long worst() {
      return Math.max(hotSync.millis(), Math.max(hotAsync.millis(), cold.millis()));
    }
  }

  /** 16 synchronous threads and a feeder of asynchronous acquires on the hot key; one thread on the cold key. */
  private static final class Load {
    private final JdbcRateLimiter limiter;
    private final List<Thread> threads = new ArrayList<>();
    private final Semaphore inFlight = new Semaphore(ASYNC_IN_FLIGHT);
    private final ConcurrentLinkedQueue<Sample> hotSync = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Sample> hotAsync = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Sample> cold = new ConcurrentLinkedQueue<>();
    final AtomicReference<Throwable> unexpected = new AtomicReference<>();
    private volatile boolean running = true;

    Load(JdbcRateLimiter limiter) {
      this.limiter = limiter;
    }

    void start() {
      for (int i = 0; i < SYNC_THREADS; i++) {
        threads.add(new Thread(() -> {
          while (running) {
            sync("hot", hotSync);
          }
        }, "recovery-hot-" + i));
      }
      threads.add(new Thread(() -> {
        while (running) {
          sync("cold", cold);
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(COLD_PERIOD_MILLIS));
        }
      }, "recovery-cold"));
      threads.add(new Thread(() -> {
        while (running) {
          try {
            if (!inFlight.tryAcquire(100, TimeUnit.MILLISECONDS)) {
              continue;
            }
          } catch (InterruptedException e) {
            return;
          }
          long t0 = System.nanoTime();
          limiter.tryAcquireAsync("hot", 1).whenComplete((d, e) -> {
            if (e != null) {
              unexpected.compareAndSet(null, e);
            } else {
              hotAsync.add(new Sample(t0, System.nanoTime(), d.path() == Path.PRIMARY));
            }
            inFlight.release();
          });
        }
      }, "recovery-async-feeder"));
      threads.forEach(t -> {
        t.setDaemon(true);
        t.start();
      });
    }

    private void sync(String key, ConcurrentLinkedQueue<Sample> into) {
      long t0 = System.nanoTime();
      try {
        Decision d = limiter.tryAcquire(key);
        into.add(new Sample(t0, System.nanoTime(), d.path() == Path.PRIMARY));
      } catch (RuntimeException | Error e) {
        unexpected.compareAndSet(null, e);
      }
    }

    /** Waits until every kind of caller recovered after {@code returned}, at most {@code millis}. */
    Recovery awaitRecovery(long returned, long millis) throws InterruptedException {
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      Recovery r;
      while (!(r = recovery(returned)).recovered()) {
        assertThat(System.nanoTime()).as("every key decides on the store within %d ms: %s", millis, r).isLessThan(end);
        Thread.sleep(10);
      }
      return r;
    }

    Recovery recovery(long returned) {
      return new Recovery(of(hotSync, returned), of(hotAsync, returned), of(cold, returned));
    }

    private static KeyRecovery of(ConcurrentLinkedQueue<Sample> samples, long returned) {
      long firstPrimary = Long.MAX_VALUE;
      long lastFailure = returned;
      int failures = 0;
      for (Sample s : samples) {
        if (s.primary() && s.end() - returned >= 0) {
          firstPrimary = Math.min(firstPrimary, s.end() - returned);
        } else if (!s.primary() && s.start() - returned >= 0) {
          lastFailure = Math.max(lastFailure, s.start());
          failures++;
        }
      }
      return new KeyRecovery(firstPrimary == Long.MAX_VALUE ? -1 : TimeUnit.NANOSECONDS.toMillis(firstPrimary),
          TimeUnit.NANOSECONDS.toMillis(lastFailure - returned), failures);
    }

    /** Drops the samples so far: each fault is judged on its own. */
    void forget() {
      hotSync.clear();
      hotAsync.clear();
      cold.clear();
    }

    void stop() throws InterruptedException {
      running = false;
      for (Thread t : threads) {
        t.join(10_000);
      }
      inFlight.tryAcquire(ASYNC_IN_FLIGHT, 10, TimeUnit.SECONDS);
    }
  }
}

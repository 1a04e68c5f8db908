package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, "recovery needs no restart": after a fault on the PostgreSQL store every key of a
 * limiter decides on the store again as soon as the server can. The faults, on a private server
 * (never the shared one), each held {@link #OUTAGE_MILLIS}: every server process SIGKILLed and the
 * server started again, an immediate stop and a start, SIGSTOP and SIGCONT, and every backend of the
 * limiter's database terminated with {@code pg_terminate_backend}. The load: 16 synchronous threads
 * hammering one hot key (coalesced), asynchronous acquires kept in flight on it, and a cold key asked
 * by one thread every {@link #COLD_PERIOD_MILLIS}; the pool is HikariCP as docs/postgresql.md
 * configures it.
 *
 * <p>The store's return is the start of the first connection attempt that succeeds after a start
 * (attempts every millisecond), the moment every process has been sent SIGCONT, the moment
 * {@code pg_terminate_backend} returned. A key's recovery is the time from then to the first decision
 * by the store of a request for it asked after the return. The floor is what the server itself
 * needs: the same for a limiter that opens a new connection for every call, asking in a loop from
 * the return. Asserted: every key recovers within {@link #MARGIN_MILLIS} of the floor, and no
 * request asked after a key recovered is refused for an unavailable store. The target,
 * {@link #RECOVERY_MILLIS} from the return, is printed against: before the fix the pool's retry
 * back-off made it 0.3 to 5.2 s.
 *
 * <p>Run: {@code ./mvnw -B -q -pl sluice-jdbc -am verify -Dtest=PostgresRecoveryTest
 * -Dsurefire.failIfNoSpecifiedTests=false} (about 25 s).
 */
class PostgresRecoveryTest {
  static final Duration DEADLINE = Duration.ofMillis(300);
  /** The target: every key decides on the store this soon after the store's return. */
  static final long RECOVERY_MILLIS = 100;
  /**
   * What the limiter may add to the floor on this 2-core machine shared with other builds: mostly 24
   * to 142 ms at load averages of 9 to 14, at worst 319 ms (new backends plan their first
   * statements, every thread waits for a CPU). The pool's back-off, which
   * this test was written against, made recovery 0.3 to 5.2 s.
   */
  static final long MARGIN_MILLIS = 500;
  /** How long each fault keeps the store away: long enough for any backoff to grow. */
  static final long OUTAGE_MILLIS = 2_000;
  static final int SYNC_THREADS = 16;
  static final int ASYNC_IN_FLIGHT = 64;
  static final long COLD_PERIOD_MILLIS = 10;

  enum Fault { SIGKILL_AND_START, STOP_AND_START, SIGSTOP_SIGCONT, TERMINATE_BACKENDS }

  @Test
  void everyKeyDecidesOnTheStoreAgainSoonAfterTheServersReturn() throws Exception {
    try (PostgresPrivateServer server = PostgresPrivateServer.start()) {
      try (Connection c = DriverManager.getConnection(server.url("postgres")); Statement s = c.createStatement()) {
        s.execute("CREATE DATABASE sluice");
      }
      HikariConfig cfg = new HikariConfig(); // as docs/postgresql.md configures it
      cfg.setJdbcUrl(server.url());
      cfg.setMaximumPoolSize(16);
      cfg.setMinimumIdle(0);
      cfg.setInitializationFailTimeout(-1);
      cfg.setConnectionInitSql(PostgresDeadlineUnderLoadTest.STATEMENT_TIMEOUT);
      Policy policy = Policy.fixedWindow(PostgresTestSupport.name("recovery"), 1_000_000_000L, Duration.ofHours(1));
      String table = PostgresTestSupport.tableName();
      List<String> report = new ArrayList<>();
      long worst = Long.MIN_VALUE;
      int unavailableAfterRecovery = 0;
      try (HikariDataSource ds = new HikariDataSource(cfg);
           JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).table(table).timeout(DEADLINE).build();
           JdbcRateLimiter unpooled = JdbcRateLimiter.builder(policy, new PostgresUnpooledDataSource(server.url()))
               .table(table).timeout(Duration.ofSeconds(1)).build()) {
        limiter.applySchema();
        Load load = new Load(limiter);
        load.start();
        try {
          load.awaitRecovery(System.nanoTime(), 30_000);
          Thread.sleep(1_000); // a second of steady load, so the first fault meets a warm pool and busy lanes
          for (Fault fault : Fault.values()) {
            load.forget();
            Return back = inflict(fault, server, unpooled);
            long returned = back.at();
            long floor = back.floorMillis();
            load.awaitRecovery(returned, 10_000);
            Thread.sleep(500); // a key that falls back to the failure mode after its first decision by the store is seen
            Recovery r = load.recovery(returned);
            String line = String.format("%-19s hot sync %s; hot async %s; cold %s; a new connection's first decision %d ms"
                + " (the slowest key %+d ms; %s the %d ms target); load average %s", fault, r.hotSync, r.hotAsync, r.cold, floor,
                r.worst() - floor, r.worst() <= RECOVERY_MILLIS ? "within" : "over", RECOVERY_MILLIS, loadAverage());
            report.add(line);
            System.err.println("[recovery] " + line);
            worst = Math.max(worst, r.worst() - floor);
            unavailableAfterRecovery += r.unavailableAfterRecovery();
          }
        } finally {
          load.stop();
        }
        assertThat(load.unexpected.get()).as("exceptions from decisions (never expected)").isNull();
      }
      String all = String.join("\n", report);
      assertThat(unavailableAfterRecovery).as("STORE_UNAVAILABLE decisions asked after a key's recovery:%n%s", all).isZero();
      assertThat(worst).as("the slowest key's recovery beyond the floor, in ms, after any fault:%n%s", all)
          .isLessThanOrEqualTo(MARGIN_MILLIS);
    }
  }

  /**
   * The store's return: the instant, and what the server itself needed after it, from then to the
   * first decision by the store of a limiter that opens a new connection for every call (no pool),
   * asked in a loop from that instant: the floor of any client's recovery.
   */
  private record Return(long at, long floorMillis) { }

  private static long floorMillis(JdbcRateLimiter unpooled, long returned) {
    long end = returned + TimeUnit.SECONDS.toNanos(30);
    while (unpooled.tryAcquire("floor").path() != Path.PRIMARY) {
      assertThat(System.nanoTime()).as("a new connection's decision within 30 s of the return").isLessThan(end);
    }
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - returned);
  }

  /** Inflicts {@code fault}, holds it for {@link #OUTAGE_MILLIS}, ends it. */
  private static Return inflict(Fault fault, PostgresPrivateServer server, JdbcRateLimiter unpooled) throws Exception {
    switch (fault) {
      case SIGKILL_AND_START -> {
        signal("-KILL", serverProcesses(server));
        Thread.sleep(OUTAGE_MILLIS);
        return start(server, unpooled);
      }
      case STOP_AND_START -> {
        server.stopServer();
        Thread.sleep(OUTAGE_MILLIS);
        return start(server, unpooled);
      }
      case SIGSTOP_SIGCONT -> {
        signal("-STOP", serverProcesses(server));
        Thread.sleep(OUTAGE_MILLIS);
        signal("-CONT", serverProcesses(server));
        long at = System.nanoTime();
        return new Return(at, floorMillis(unpooled, at));
      }
      case TERMINATE_BACKENDS -> {
        try (Connection obs = DriverManager.getConnection(server.url("postgres")); Statement s = obs.createStatement()) {
          s.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'sluice'");
        }
        long at = System.nanoTime();
        return new Return(at, floorMillis(unpooled, at));
      }
      default -> throw new IllegalStateException(fault.toString());
    }
  }

  /**
   * Starts the server; its return is the start of the first connection attempt that succeeded
   * (attempts every millisecond, from another thread, which then measures the floor at once).
   */
  private static Return start(PostgresPrivateServer server, JdbcRateLimiter unpooled) throws Exception {
    AtomicReference<Return> back = new AtomicReference<>();
    Thread probe = new Thread(() -> {
      while (true) {
        long t = System.nanoTime();
        try (Connection c = DriverManager.getConnection(server.url("postgres"))) {
          // accepted
        } catch (SQLException notYet) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
          continue;
        }
        back.set(new Return(t, floorMillis(unpooled, t)));
        return;
      }
    }, "recovery-probe");
    probe.setDaemon(true);
    probe.start();
    server.startServer();
    probe.join(30_000);
    assertThat(back.get()).as("the server accepts connections and decides within 30 s of pg_ctl start").isNotNull();
    return back.get();
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

  /** One decision: when it was asked and answered, and why the failure mode made it (null: the store made it). */
  private record Sample(long start, long end, Reason failure) { }

  /**
   * One kind of caller after a return: its first decision by the store, in ms after the return (-1:
   * none yet), and the failure-mode decisions asked after that one, by reason.
   */
  private record KeyRecovery(long firstByTheStore, Map<Reason, Integer> failuresAfter) {
    boolean recovered() {
      return firstByTheStore >= 0;
    }

    @Override public String toString() {
      return !recovered() ? "not recovered" : firstByTheStore + " ms" + (failuresAfter.isEmpty() ? "" : ", then " + failuresAfter);
    }
  }

  private record Recovery(KeyRecovery hotSync, KeyRecovery hotAsync, KeyRecovery cold) {
    boolean recovered() {
      return hotSync.recovered() && hotAsync.recovered() && cold.recovered();
    }

    long worst() {
      return Math.max(hotSync.firstByTheStore(), Math.max(hotAsync.firstByTheStore(), cold.firstByTheStore()));
    }

    int unavailableAfterRecovery() {
      return hotSync.failuresAfter().getOrDefault(Reason.STORE_UNAVAILABLE, 0)
          + hotAsync.failuresAfter().getOrDefault(Reason.STORE_UNAVAILABLE, 0)
          + cold.failuresAfter().getOrDefault(Reason.STORE_UNAVAILABLE, 0);
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
          inFlight.acquireUninterruptibly(); // given back as a decision completes, each by its deadline
          if (!running) {
            inFlight.release();
            return;
          }
          long t0 = System.nanoTime();
          limiter.tryAcquireAsync("hot", 1).whenComplete((d, e) -> {
            if (e != null) {
              unexpected.compareAndSet(null, e);
            } else {
              hotAsync.add(new Sample(t0, System.nanoTime(), d.path() == Path.PRIMARY ? null : d.reason()));
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
        into.add(new Sample(t0, System.nanoTime(), d.path() == Path.PRIMARY ? null : d.reason()));
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
      long first = Long.MAX_VALUE;
      for (Sample s : samples) {
        if (s.failure() == null && s.start() - returned >= 0) {
          first = Math.min(first, s.end() - returned);
        }
      }
      Map<Reason, Integer> after = new TreeMap<>();
      for (Sample s : samples) {
        if (s.failure() != null && first != Long.MAX_VALUE && s.start() - returned > first) {
          after.merge(s.failure(), 1, Integer::sum);
        }
      }
      return new KeyRecovery(first == Long.MAX_VALUE ? -1 : TimeUnit.NANOSECONDS.toMillis(first), after);
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

package dev.sluice.jdbc;

import static dev.sluice.tck.RateLimiterContract.hammer;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.internal.ModelSteps;
import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.StepResult;
import dev.sluice.spi.Backend;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Request coalescing on PostgreSQL (issue 18): concurrent acquires for one key go to the database in
 * fewer statements than there are decisions (one batch statement, {@link PostgresSql#batch}, decides
 * a whole batch), exactly the limit is admitted, and {@code maxBatch(1)} sends at least one statement
 * per decision (more when a stale snapshot makes an acquire ask again: those are the retries the
 * batch statement does not have). The kit ({@link PostgresConformanceTest}) checks that batches decide
 * exactly as the reference model, field by field; this class checks the statement itself, directly.
 */
class PostgresCoalescingTest {
  @RegisterExtension static final PostgresTable db = new PostgresTable(16);

  /** {@code ds} with every statement execution counted (each is one round trip: PostgresRoundTripTest). */
  static final class CountingDataSource {
    final AtomicLong statements = new AtomicLong();
    final DataSource ds;

    CountingDataSource(DataSource target) {
      this.ds = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
          (proxy, m, args) -> {
            Object r = call(target, m, args);
            return m.getName().equals("getConnection") ? connection((Connection) r) : r;
          });
    }

    private Connection connection(Connection c) {
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
          (proxy, m, args) -> {
            Object r = call(c, m, args);
            return r instanceof PreparedStatement ps ? statement(ps) : r;
          });
    }

    private PreparedStatement statement(PreparedStatement ps) {
      return (PreparedStatement) Proxy.newProxyInstance(PreparedStatement.class.getClassLoader(),
          new Class<?>[] {PreparedStatement.class}, (proxy, m, args) -> {
            if (m.getName().startsWith("execute") && (args == null || args.length == 0)) {
              statements.incrementAndGet();
            }
            return call(ps, m, args);
          });
    }

    private static Object call(Object target, java.lang.reflect.Method m, Object[] args) throws Throwable {
      try {
        return m.invoke(target, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }

  private static Policy policy(long limit) {
    return Policy.fixedWindow(PostgresTestSupport.name("coalesce"), limit, Duration.ofMinutes(10));
  }

  private static JdbcRateLimiter.Builder builder(Policy p, DataSource ds) {
    return JdbcRateLimiter.builder(p, ds).table(db.table()).timeout(Duration.ofSeconds(20));
  }

  @Test void sixteenThreadsOnOneHotKeyShareStatementsAndAdmitExactlyTheLimit() throws Exception {
    long limit = 1_000;
    CountingDataSource counted = new CountingDataSource(db.ds());
    try (JdbcRateLimiter l = builder(policy(limit), counted.ds).build()) {
      long admitted = hammer(16, 100, i -> l.tryAcquire("hot").allowed());
      long statements = counted.statements.get();
      System.out.printf("coalescing on: 1600 sync decisions on one key (limit %d) in %d statements (%.3f per decision)%n",
          limit, statements, statements / 1600.0);
      assertThat(admitted).isEqualTo(limit);
      assertThat(statements).as("statements for 1,600 decisions").isLessThan(1_600);
    }
  }

  @Test void maxBatchOneSendsAStatementPerDecisionAndRetriesStaleSnapshots() throws Exception {
    long limit = 1_000;
    CountingDataSource counted = new CountingDataSource(db.ds());
    try (JdbcRateLimiter l = builder(policy(limit), counted.ds).maxBatch(1).build()) {
      // A decision that found no pooled connection within the pool's 1 s (a starved machine) never
      // reached the database: it sent no statement, and is counted apart.
      AtomicLong unreached = new AtomicLong();
      long admitted = hammer(16, 100, i -> {
        Decision d = l.tryAcquire("hot");
        if (d.reason().isFailure()) {
          unreached.incrementAndGet();
        }
        return d.allowed();
      });
      long statements = counted.statements.get();
      long reached = 1_600 - unreached.get();
      System.out.printf("coalescing off: %d sync decisions on one key (limit %d) reached the database in %d statements"
          + " (%d retries of a stale snapshot; %d found no connection)%n", reached, limit, statements, statements - reached,
          unreached.get());
      assertThat(admitted).isEqualTo(limit);
      assertThat(unreached.get()).as("decisions that never reached the database").isLessThan(600);
      assertThat(statements).isGreaterThanOrEqualTo(reached);
    }
  }

  @Test void asyncCallsInFlightOnOneKeyShareStatements() {
    CountingDataSource counted = new CountingDataSource(db.ds());
    try (JdbcRateLimiter l = builder(policy(500), counted.ds).build()) {
      List<CompletableFuture<Decision>> all = new ArrayList<>();
      for (int i = 0; i < 2_000; i++) {
        all.add(l.tryAcquireAsync("hot", 1).toCompletableFuture());
      }
      long admitted = all.stream().filter(f -> f.join().allowed()).count();
      System.out.println("coalescing on: 2000 async decisions on one key in " + counted.statements.get() + " statements");
      assertThat(admitted).isEqualTo(500);
      assertThat(counted.statements.get()).isLessThan(2_000);
    }
  }

  static Stream<Policy> policies() {
    return Stream.of(
        Policy.fixedWindow(PostgresTestSupport.name("fw"), 7, Duration.ofMillis(100)),
        Policy.slidingWindow(PostgresTestSupport.name("sw"), 9, Duration.ofMillis(50)),
        Policy.tokenBucket(PostgresTestSupport.name("tb"), 10, 3, Duration.ofMillis(40)),
        Policy.gcra(PostgresTestSupport.name("gc"), 5, Duration.ofMillis(30), 8));
  }

  /**
   * The batch statement, called directly with seeded random batches (1 to 12 requests of 1 to 4
   * permits, clock steps across windows and refills), against the reference model folding the same
   * requests: every field of every result equal, each batch one statement.
   */
  @ParameterizedTest @MethodSource("policies")
  void theBatchStatementDecidesEachRequestAsTheModel(Policy p) throws Exception {
    SplittableRandom rnd = new SplittableRandom(p.algorithm().id().hashCode());
    ManualTicker ticker = ManualTicker.at(1_700_000_000_000_000L);
    CountingDataSource counted = new CountingDataSource(db.ds());
    try (JdbcRateLimiter l = builder(p, counted.ds).ticker(ticker).build()) {
      long[] st = new long[3];
      Outcome out = new Outcome();
      for (int b = 0; b < 200; b++) {
        long[] permits = new long[1 + rnd.nextInt(12)];
        for (int i = 0; i < permits.length; i++) {
          permits[i] = 1 + rnd.nextInt(4);
        }
        long now = ticker.nowMicros();
        long before = counted.statements.get();
        StepResult[] got = l.backend.stepBatch(p, "", "k", permits, now, System.nanoTime() + Duration.ofSeconds(20).toNanos());
        assertThat(counted.statements.get() - before).as("statements for batch %d", b).isEqualTo(1);
        for (int i = 0; i < permits.length; i++) {
          ReferenceModel.acquire(p.algorithm(), st, now, permits[i], out);
          StepResult want = ModelSteps.of(out);
          assertThat(got[i]).as("batch %d request %d of %d permits at %d", b, i, permits[i], now).usingRecursiveComparison()
              .isEqualTo(want);
        }
        ticker.advanceMicros(rnd.nextInt(3) == 0 ? 1 + rnd.nextInt(60_000) : rnd.nextInt(2_000));
      }
    }
  }

  /** A batch on a row pinned to another algorithm is decided request by request with the override. */
  @Test void aBatchOnAKeyPinnedToAnotherAlgorithmIsDecidedWithTheOverride() throws Exception {
    Policy p = policy(100);
    Policy pin = Policy.tokenBucket(p.name(), 3, 1, Duration.ofMinutes(10));
    try (JdbcRateLimiter l = builder(p, db.ds()).build()) {
      l.override("acct", pin);
      StepResult[] rs = l.backend.stepBatch(p, "", "acct", new long[] {1, 1, 1, 1, 1}, Backend.STORE_CLOCK,
          System.nanoTime() + Duration.ofSeconds(20).toNanos());
      assertThat(rs).extracting(StepResult::allowed).containsExactly(true, true, true, false, false);
      assertThat(rs).allSatisfy(r -> assertThat(r.decidedBy()).isEqualTo(pin));
    }
  }

  /** A malformed row fails every request of the batch closed, and the batch writes nothing. */
  @Test void aBatchOnAMalformedRowIsCorruptForEveryRequest() throws Exception {
    Policy p = policy(100);
    try (JdbcRateLimiter l = builder(p, db.ds()).build()) {
      assertThat(l.tryAcquire("bad").allowed()).isTrue();
      try (Connection c = db.ds().getConnection(); Statement s = c.createStatement()) {
        s.executeUpdate("UPDATE " + db.table() + " SET s1 = -5 WHERE key_id = '" + dev.sluice.internal.StoredId.key(p.name(), "bad")
            + "'");
      }
      StepResult[] rs = l.backend.stepBatch(p, "", "bad", new long[] {1, 2, 1}, Backend.STORE_CLOCK,
          System.nanoTime() + Duration.ofSeconds(20).toNanos());
      assertThat(rs).allSatisfy(r -> assertThat(r.failure()).isEqualTo(Reason.CORRUPT_STATE));
      try (Connection c = db.ds().getConnection(); Statement s = c.createStatement();
           var q = s.executeQuery("SELECT s1 FROM " + db.table() + " WHERE key_id = '"
               + dev.sluice.internal.StoredId.key(p.name(), "bad") + "'")) {
        assertThat(q.next()).isTrue();
        assertThat(q.getLong(1)).isEqualTo(-5);
      }
    }
  }
}

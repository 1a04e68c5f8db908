package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.PostgresCoalescingTest.CountingDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tenant mode under row-level security, exercised as an ordinary role (no superuser, no BYPASSRLS:
 * either would bypass RLS and prove nothing), from {@link PostgresRlsTable}.
 */
class PostgresTenantTest {
  @RegisterExtension static final PostgresRlsTable db = new PostgresRlsTable(4);

  @Test
  void theTestRoleIsNeitherSuperuserNorBypassesRls() throws SQLException {
    try (Connection c = db.asRole().getConnection(); Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")) {
      rs.next();
      assertThat(rs.getBoolean(1)).isFalse();
      assertThat(rs.getBoolean(2)).isFalse();
    }
  }

  @Test
  void tenantsCanNeitherReadNorWriteEachOthersRows() throws Exception {
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("tenant"), 3, Duration.ofHours(1));
    AtomicReference<String> current = new AtomicReference<>("acme");
    try (JdbcRateLimiter acme = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).tenant(() -> "acme").build();
         JdbcRateLimiter globex = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).tenant(() -> "globex").build();
         JdbcRateLimiter perRequest = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).tenant(current::get).build()) {
      for (int i = 0; i < 3; i++) {
        assertThat(acme.tryAcquire("user:1").allowed()).isTrue();
      }
      assertThat(acme.tryAcquire("user:1").reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      assertThat(globex.tryAcquire("user:1").remaining()).as("the same key is another budget in another tenant").isEqualTo(2);
      globex.reset("user:1");
      assertThat(acme.tryAcquire("user:1").reason()).as("globex's reset cannot touch acme's row").isEqualTo(Reason.LIMIT_EXCEEDED);
      current.set("globex");
      assertThat(perRequest.peek("user:1").remaining()).isEqualTo(3);
      current.set("acme");
      assertThat(perRequest.peek("user:1").remaining()).isZero();
    }

    String acmeKey = StoredId.key(p.name(), "user:1");
    try (Connection c = db.asRole().getConnection(); Statement s = c.createStatement()) {
      // No tenant bound: nothing is visible.
      assertThat(count(s, "SELECT count(*) FROM " + db.table())).isZero();
      c.setAutoCommit(false);
      s.execute("SELECT set_config('sluice.tenant', 'globex', true)");
      assertThat(count(s, "SELECT count(*) FROM " + db.table() + " WHERE tenant = 'acme'")).as("cross-tenant read").isZero();
      assertThat(count(s, "SELECT count(*) FROM " + db.table() + " WHERE key_id = '" + acmeKey + "'"))
          .as("only globex's own row (after its reset: none)").isZero();
      assertThat(s.executeUpdate("UPDATE " + db.table() + " SET s1 = 0 WHERE tenant = 'acme'")).as("cross-tenant update").isZero();
      assertThat(s.executeUpdate("DELETE FROM " + db.table() + " WHERE tenant = 'acme'")).as("cross-tenant delete").isZero();
      assertThatThrownBy(() -> s.executeUpdate("INSERT INTO " + db.table()
          + " (tenant, policy_id, key_id, alg, p1, p2, p3, s0, s1, s2, expires_at, version, updated_at)"
          + " VALUES ('acme', 'x', 'y', 1, 1, 1000, 0, 1, 1, 0, 1, 1, 1)"))
          .as("cross-tenant insert").isInstanceOf(SQLException.class).hasMessageContaining("row-level security");
      c.rollback();
      s.execute("SELECT set_config('sluice.tenant', 'globex', true)");
      try (JdbcRateLimiter globex = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).tenant(() -> "globex").build()) {
        globex.tryAcquire("user:2");
      }
      assertThatThrownBy(() -> s.executeUpdate("UPDATE " + db.table() + " SET tenant = 'acme'"))
          .as("moving a row into another tenant").isInstanceOf(SQLException.class).hasMessageContaining("row-level security");
      c.rollback();
    }

    // The owner (superuser) still sees acme's row untouched: count 3 in the current window.
    try (Connection c = DriverManager.getConnection(PostgresTestSupport.URL); Statement s = c.createStatement()) {
      assertThat(count(s, "SELECT s1 FROM " + db.table() + " WHERE tenant = 'acme' AND key_id = '" + acmeKey + "'")).isEqualTo(3);
    }
  }

  /**
   * Issue 14, finding 10: a tenant id containing NUL made every decision STORE_UNAVAILABLE (PostgreSQL
   * text cannot hold it), so under FailureMode.open that tenant had no limit; a lone surrogate or a
   * 100 kB id failed the same way. A tenant id is now validated as strictly as a key, by the core.
   */
  @Test
  void aTenantIdWithNulWasAStoreFailureAndUnderOpenNoLimit() {
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("bad-tenant"), 2, Duration.ofHours(1));
    AtomicReference<String> current = new AtomicReference<>();
    java.util.concurrent.atomic.AtomicInteger alerts = new java.util.concurrent.atomic.AtomicInteger();
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).tenant(current::get).timeout(Duration.ofSeconds(5))
        .failureMode(dev.sluice.FailureMode.open((pol, r, e) -> alerts.incrementAndGet())).build()) {
      current.set("ac\u0000me");
      assertThatThrownBy(() -> l.tryAcquire("k")).isInstanceOf(IllegalArgumentException.class)
          .hasMessage("tenant \"ac\\u0000me\" contains NUL (U+0000) at index 2; a tenant id is stored as given and the store"
              + " cannot hold NUL: remove it, or map tenants to ids");
      current.set("lone\uD800");
      assertThatThrownBy(() -> l.tryAcquire("k")).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("unpaired UTF-16 surrogate at index 4");
      current.set("t".repeat(100_000));
      assertThatThrownBy(() -> l.peek("k")).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("is 100000 UTF-16 code units long");
      // the longest id, any well-formed Unicode but NUL, is a tenant like any other
      for (String ok : new String[] {"\uD83D\uDE00".repeat(128), "tab\tand\u0001"}) {
        current.set(ok);
        assertThat(l.tryAcquire("k").reason()).isEqualTo(Reason.WITHIN_LIMIT);
        assertThat(l.tryAcquire("k").reason()).isEqualTo(Reason.WITHIN_LIMIT);
        assertThat(l.tryAcquire("k").reason()).isEqualTo(Reason.LIMIT_EXCEEDED);
      }
    }
    assertThat(alerts).as("no decision failed open").hasValue(0);
  }

  /**
   * Issue 18 regression: coalescing keyed a lane by (policy, key) alone and sent a batch from the
   * thread that finished the call before it, so in tenant mode requests of two tenants for one key
   * shared a batch and its tenant was read on the wrong thread (a thread-local supplier gave none:
   * STORE_UNAVAILABLE refusals; 18 of 100 admitted). Tenant mode then did not coalesce; now a lane
   * is scoped by the tenant read on each caller's thread ({@code batchScope}) and each batch runs
   * under its own: with coalescing on, sync and async, each tenant gets exactly its limit, in fewer
   * statements than decisions.
   */
  @Test
  void tenantsHammeringOneKeyFromManyThreadsEachGetExactlyTheirLimit() throws Exception {
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("tenant-hot"), 100, Duration.ofHours(1));
    ThreadLocal<String> current = new ThreadLocal<>();
    java.util.Map<String, java.util.concurrent.atomic.AtomicLong> admitted = new java.util.concurrent.ConcurrentHashMap<>();
    CountingDataSource counted = new CountingDataSource(db.asRole());
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, counted.ds).table(db.table()).tenant(current::get)
        .timeout(Duration.ofSeconds(20)).build()) {
      dev.sluice.tck.RateLimiterContract.hammer(16, 30, i -> {
        String t = i % 2 == 0 ? "acme" : "globex";
        current.set(t);
        boolean ok = (i % 4 < 2 ? l.tryAcquire("hot") : l.tryAcquireAsync("hot", 1).toCompletableFuture().join()).allowed();
        if (ok) {
          admitted.computeIfAbsent(t, k -> new java.util.concurrent.atomic.AtomicLong()).incrementAndGet();
        }
        return ok;
      });
    }
    long statements = counted.statements.get();
    System.out.printf("tenant mode, coalescing on: 480 decisions on one key from two tenants in %d statements%n", statements);
    assertThat(admitted.get("acme")).as("acme").hasValue(100);
    assertThat(admitted.get("globex")).as("globex").hasValue(100);
    assertThat(statements).as("statements for 480 decisions: batches formed").isLessThan(480);
  }

  /**
   * Issue 18, tenant-mode coalescing: acquires of two tenants for one (policy, key), issued together,
   * queue behind one statement. Were the lane that (policy, key) alone, a batch would hold both
   * tenants' requests and run under one tenant, charging the other's requests to its row. A batch
   * holds one tenant's requests only: each tenant gets exactly its own limit, and its own row holds
   * exactly that count.
   */
  @Test
  void twoTenantsAcquiringOneKeyTogetherNeverShareABatch() throws Exception {
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("tenant-lanes"), 50, Duration.ofHours(1));
    AtomicReference<String> current = new AtomicReference<>();
    CountingDataSource counted = new CountingDataSource(db.asRole());
    List<CompletableFuture<Decision>> acme = new ArrayList<>();
    List<CompletableFuture<Decision>> globex = new ArrayList<>();
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, counted.ds).table(db.table()).tenant(current::get)
        .timeout(Duration.ofSeconds(20)).build()) {
      for (int i = 0; i < 300; i++) {
        boolean first = i % 2 == 0;
        current.set(first ? "acme" : "globex");
        (first ? acme : globex).add(l.tryAcquireAsync("shared", 1).toCompletableFuture());
      }
      assertThat(allowed(acme)).as("acme").isEqualTo(50);
      assertThat(allowed(globex)).as("globex").isEqualTo(50);
    }
    long statements = counted.statements.get();
    System.out.printf("tenant mode, coalescing on: 300 async decisions of two tenants on one key in %d statements%n", statements);
    assertThat(statements).as("statements for 300 decisions: batches formed").isLessThan(300);
    String id = StoredId.key(p.name(), "shared");
    try (Connection c = DriverManager.getConnection(PostgresTestSupport.URL); Statement s = c.createStatement()) {
      for (String t : new String[] {"acme", "globex"}) {
        assertThat(count(s, "SELECT s1 FROM " + db.table() + " WHERE tenant = '" + t + "' AND key_id = '" + id + "'"))
            .as("%s's row", t).isEqualTo(50);
      }
    }
  }

  private static long allowed(List<CompletableFuture<Decision>> decisions) {
    long n = 0;
    for (CompletableFuture<Decision> f : decisions) {
      Decision d = f.join();
      assertThat(d.reason().isFailure()).as("%s", d).isFalse();
      n += d.allowed() ? 1 : 0;
    }
    return n;
  }

  /**
   * Tenant mode coalesces (issue 18), and a tenant that cannot be read answers as it did without
   * coalescing: an invalid tenant is an {@link IllegalArgumentException} from {@code tryAcquire} and
   * {@code tryAcquireAsync}; a supplier that throws is a store failure decided by the failure mode,
   * sync and async. The same calls on a limiter with {@code maxBatch(1)} give the same answers and the
   * same listener events.
   */
  @Test
  void aTenantSupplierThatThrowsOrIsInvalidAnswersAsWithoutCoalescing() {
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("tenant-unread"), 3, Duration.ofHours(1));
    List<String> coalescing = transcript(p, 64, "coalescing");
    List<String> alone = transcript(p, 1, "alone");
    assertThat(coalescing).isEqualTo(alone).contains(
        "sync boom: FAILURE_MODE STORE_UNAVAILABLE", "async boom: FAILURE_MODE STORE_UNAVAILABLE",
        "sync blank: IllegalArgumentException", "async blank: IllegalArgumentException",
        "store call: IllegalStateException: no tenant bound");
  }

  /** The answers and listener events of one sequence of calls, on a limiter with {@code maxBatch}. */
  private static List<String> transcript(Policy p, int maxBatch, String tenant) {
    List<String> out = new CopyOnWriteArrayList<>();
    RateLimitListener listener = new RateLimitListener() {
      @Override public void onDecision(Decision d, String key) {
        out.add("decision: " + d.path() + " " + d.reason());
      }

      @Override public void onStoreCall(Policy policy, long nanos, Throwable error) {
        out.add("store call: " + (error == null ? "ok" : error.getClass().getSimpleName() + ": " + error.getMessage()));
      }
    };
    AtomicReference<String> current = new AtomicReference<>();
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).timeout(Duration.ofSeconds(20))
        .maxBatch(maxBatch).listener(listener, false).tenant(() -> {
          String t = current.get();
          if (t.equals("boom")) {
            throw new IllegalStateException("no tenant bound");
          }
          return t.equals("tenant") ? tenant : t;
        }).build()) {
      for (String t : new String[] {"tenant", "boom", " ", "tenant"}) {
        current.set(t);
        String name = t.equals(" ") ? "blank" : t;
        for (boolean async : new boolean[] {false, true}) {
          String call = (async ? "async " : "sync ") + name + ": ";
          try {
            Decision d = async ? l.tryAcquireAsync("k", 1).toCompletableFuture().join() : l.tryAcquire("k");
            out.add(call + d.path() + " " + d.reason());
          } catch (IllegalArgumentException e) {
            out.add(call + e.getClass().getSimpleName());
          }
        }
      }
    }
    return out;
  }

  @Test
  void aLimiterWithoutATenantIsRefusedByTheDatabaseAndFailsClosed() {
    Policy p = Policy.tokenBucket(PostgresTestSupport.name("no-tenant"), 3, 1, Duration.ofSeconds(1));
    try (JdbcRateLimiter plain = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).timeout(Duration.ofSeconds(5)).build()) {
      Decision d = plain.tryAcquire("user:1");
      assertThat(d.allowed()).isFalse();
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    }
  }

  private static long count(Statement s, String q) throws SQLException {
    try (ResultSet rs = s.executeQuery(q)) {
      return rs.next() ? rs.getLong(1) : 0;
    }
  }
}

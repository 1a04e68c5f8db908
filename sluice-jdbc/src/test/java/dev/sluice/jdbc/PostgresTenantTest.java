package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.internal.StoredId;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
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
   * STORE_UNAVAILABLE refusals). Tenant mode does not coalesce: each tenant gets exactly its limit.
   */
  @Test
  void tenantsHammeringOneKeyFromManyThreadsEachGetExactlyTheirLimit() throws Exception {
    Policy p = Policy.fixedWindow(PostgresTestSupport.name("tenant-hot"), 100, Duration.ofHours(1));
    ThreadLocal<String> current = new ThreadLocal<>();
    java.util.Map<String, java.util.concurrent.atomic.AtomicLong> admitted = new java.util.concurrent.ConcurrentHashMap<>();
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(p, db.asRole()).table(db.table()).tenant(current::get)
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
    assertThat(admitted.get("acme")).as("acme").hasValue(100);
    assertThat(admitted.get("globex")).as("globex").hasValue(100);
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

package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.internal.SqlFailure;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * A rate limiter whose state lives in a PostgreSQL table and whose every decision is one SQL
 * statement: {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING}, in autocommit. The
 * statement computes exactly the step of {@link ReferenceModel} (same state, same integer
 * arithmetic), on the row it locked, so two racing consumers of the last permit resolve to exactly
 * one winner; a refusal writes nothing.
 *
 * <pre>{@code
 * HikariDataSource ds = new HikariDataSource(config);
 * JdbcRateLimiter limiter = JdbcRateLimiter.builder(Policy.fixedWindow("login", 10, Duration.ofMinutes(5)), ds)
 *     .timeout(Duration.ofMillis(200))
 *     .build();
 * limiter.applySchema();                 // or apply schema.sql yourself
 * Decision d = limiter.tryAcquire("user:42");
 * }</pre>
 *
 * <p><b>Deadline.</b> Every call returns within {@link Builder#timeout} (default
 * {@value #DEFAULT_TIMEOUT_MILLIS} ms), covering both connection acquisition and the statement: the
 * JDBC work runs on the limiter's executor and the caller waits at most the deadline. A call that
 * misses it is decided by the {@link FailureMode} with {@link Reason#TIMEOUT}; a store error with
 * {@link Reason#STORE_UNAVAILABLE}; a malformed row always fails closed with
 * {@link Reason#CORRUPT_STATE}. Nothing but programmer errors ({@link IllegalArgumentException}) is
 * ever thrown from a decision.
 *
 * <p><b>Identity.</b> Rows are keyed by {@link StoredId#policy} and {@link StoredId#key}: neither
 * the policy name nor the key is ever written.
 *
 * <p>The exact sliding log is refused: its state grows with the limit and does not fit a row.
 */
public final class JdbcRateLimiter implements RateLimiter, AutoCloseable {
  /** The default deadline of one call, in milliseconds. */
  public static final long DEFAULT_TIMEOUT_MILLIS = 500;
  /** The default table name. */
  public static final String DEFAULT_TABLE = "sluice_rate_limit";
  /** The schema version of {@code schema.sql}, also written in the table's comment. */
  public static final int SCHEMA_VERSION = 1;
  /** Rows one sweep batch reads and deletes at most. */
  public static final int DEFAULT_SWEEP_BATCH = 1_000;

  private static final System.Logger LOG = System.getLogger(JdbcRateLimiter.class.getName());
  private static final Pattern TABLE = Pattern.compile("([A-Za-z_][A-Za-z0-9_]{0,62}\\.)?[A-Za-z_][A-Za-z0-9_]{0,62}");
  private static final Executor DIRECT = Runnable::run;
  private static final int RACE_ATTEMPTS = 3;

  private final Policy policy;
  private final DataSource dataSource;
  private final long timeoutNanos;
  private final int networkTimeoutMillis;
  private final FailureMode failureMode;
  private final Ticker ticker;
  private final String table;
  private final Supplier<String> tenant;
  private final boolean relaxedDurability;
  private final Executor executor;
  private final ExecutorService ownExecutor;
  private final RateLimitListener listener;
  private final String defaultPolicyId;

  private final PostgresSql.Bound[] acquireSql = new PostgresSql.Bound[5];
  private final PostgresSql.Bound[] refundSql = new PostgresSql.Bound[5];
  private final PostgresSql.Bound peekSql;
  private final PostgresSql.Bound resetSql;
  private final PostgresSql.Bound overrideSql;
  private final PostgresSql.Bound clearOverrideSql;
  private final PostgresSql.Bound sweepReadSql;
  private final PostgresSql.Bound sweepDeleteSql;

  private JdbcRateLimiter(Builder b) {
    this.policy = b.policy;
    this.dataSource = b.dataSource;
    this.timeoutNanos = b.timeout.toNanos();
    this.networkTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, Math.max(1_000, 2 * b.timeout.toMillis()));
    this.failureMode = b.failureMode;
    this.ticker = b.ticker;
    this.table = b.table;
    this.tenant = b.tenant;
    this.relaxedDurability = b.relaxedDurability;
    if (b.executor != null) {
      this.executor = b.executor;
      this.ownExecutor = null;
    } else {
      this.ownExecutor = defaultExecutor();
      this.executor = ownExecutor;
    }
    this.listener = RateLimitListener.guarded(b.listener, b.includeKeys);
    this.defaultPolicyId = StoredId.policy(policy.name());
    PostgresSql sql = new PostgresSql(table, ticker != null, relaxedDurability, tenant != null);
    for (int alg = 1; alg <= 4; alg++) {
      acquireSql[alg] = sql.acquire(alg);
      refundSql[alg] = sql.refund(alg);
    }
    this.peekSql = sql.peek();
    this.resetSql = sql.reset();
    this.overrideSql = sql.override();
    this.clearOverrideSql = sql.clearOverride();
    this.sweepReadSql = sql.sweepRead();
    this.sweepDeleteSql = sql.sweepDelete();
  }

  /** A builder for a limiter whose default policy is {@code policy}, over {@code dataSource}. */
  public static Builder builder(Policy policy, DataSource dataSource) {
    return new Builder(policy, dataSource);
  }

  @Override public Policy policy() {
    return policy;
  }

  /** The table this limiter reads and writes. */
  public String table() {
    return table;
  }

  // ---------------------------------------------------------------------------------------------
  // Decisions.
  // ---------------------------------------------------------------------------------------------

  @Override public Decision tryAcquire(String key, long permits, Policy policy) {
    return decide(call(key, permits, policy, Op.ACQUIRE));
  }

  @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
    return async(call(key, permits, policy, Op.ACQUIRE));
  }

  @Override public Decision peek(String key, Policy policy) {
    return decide(call(key, 1, policy, Op.PEEK));
  }

  /** The sync path: the statement runs on the executor; this thread waits at most until the deadline. */
  private Decision decide(Call call) {
    if (call.invalidClock) {
      return finish(call, failure(call, Reason.INVALID_CLOCK, null));
    }
    CompletableFuture<Decision> f;
    try {
      f = CompletableFuture.supplyAsync(() -> run(call), executor);
    } catch (RejectedExecutionException e) {
      return finish(call, failure(call, Reason.STORE_UNAVAILABLE, e));
    }
    return finish(call, await(call, f));
  }

  /** Asynchronous {@link #peek(String, Policy)}, on the limiter's executor, completing within the deadline. */
  public CompletionStage<Decision> peekAsync(String key, Policy policy) {
    return async(call(key, 1, policy, Op.PEEK));
  }

  private CompletionStage<Decision> async(Call call) {
    if (call.invalidClock) {
      return CompletableFuture.completedFuture(finish(call, failure(call, Reason.INVALID_CLOCK, null)));
    }
    CompletableFuture<Decision> f;
    try {
      f = CompletableFuture.supplyAsync(() -> run(call), executor);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.completedFuture(finish(call, failure(call, Reason.STORE_UNAVAILABLE, e)));
    }
    long left = call.deadline - System.nanoTime();
    return f.orTimeout(Math.max(0, left), TimeUnit.NANOSECONDS).handle((d, e) -> {
      if (e == null && d != null) {
        return finish(call, d);
      }
      Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
      if (cause instanceof StoreFailure sf) {
        return finish(call, failure(call, sf.reason, sf.getCause()));
      }
      return finish(call, failure(call, cause instanceof TimeoutException || e == null ? Reason.TIMEOUT : Reason.STORE_UNAVAILABLE, cause));
    });
  }

  private Call call(String key, long permits, Policy p, Op op) {
    Checks.notNull("policy", p);
    Checks.key(key);
    Checks.permits(permits, p.limit(), p.name());
    int alg = code(p.algorithm());
    String t = tenant == null ? "" : tenantValue();
    Call c = new Call(op, p, key, permits, alg, t, System.nanoTime() + timeoutNanos);
    if (ticker != null) {
      c.now = ticker.nowMicros();
      c.invalidClock = c.now <= 0;
    }
    return c;
  }

  private String tenantValue() {
    String t = tenant.get();
    if (t == null || t.isBlank()) {
      throw new IllegalArgumentException("tenant " + (t == null ? "null" : Checks.quote(t))
          + " is blank; tenant mode needs the current tenant from the supplier given to tenant(...)");
    }
    return t;
  }

  private Decision await(Call call, CompletableFuture<Decision> f) {
    long left = call.deadline - System.nanoTime();
    try {
      Decision d = f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
      return d != null ? d : failure(call, Reason.TIMEOUT, null);
    } catch (TimeoutException e) {
      return failure(call, Reason.TIMEOUT, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failure(call, Reason.TIMEOUT, e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof StoreFailure sf) {
        return failure(call, sf.reason, sf.getCause());
      }
      return failure(call, Reason.STORE_UNAVAILABLE, e.getCause());
    }
  }

  private Decision finish(Call call, Decision d) {
    listener.onDecision(d, call.key);
    return d;
  }

  /** The decision of the failure mode for {@code reason} (corrupt state and invalid clock are always closed). */
  private Decision failure(Call call, Reason reason, Throwable cause) {
    long now = ticker != null ? ticker.nowMicros() : Ticker.system().nowMicros();
    if (call.op == Op.PEEK && failureMode instanceof FailureMode.Fallback fb
        && reason != Reason.CORRUPT_STATE && reason != Reason.INVALID_CLOCK) {
      try {
        return fb.local().peek(call.key, call.policy).withPath(Path.FALLBACK);
      } catch (RuntimeException e) {
        return FailureMode.closed().decide(call.policy, call.key, 1, reason, cause, now);
      }
    }
    return failureMode.decide(call.policy, call.key, call.permits, reason, cause, now);
  }

  /**
   * Runs on the executor: the statement(s) of one call. A failure is thrown as {@link StoreFailure}
   * and turned into a decision by the waiting caller, so the failure mode (and its alert) runs once.
   */
  private Decision run(Call call) {
    if (System.nanoTime() - call.deadline >= 0) {
      return null; // the caller has already been answered with a timeout; do not touch the store
    }
    long start = System.nanoTime();
    try {
      Decision d;
      if (call.op == Op.PEEK) {
        d = peekStatement(call);
      } else {
        try (Connection c = connection()) {
          d = acquireStatement(c, call, call.policy, call.alg);
        }
      }
      listener.onStoreCall(call.policy, System.nanoTime() - start, null);
      return d;
    } catch (StoreFailure e) {
      listener.onStoreCall(call.policy, System.nanoTime() - start, null);
      throw e;
    } catch (SQLException | RuntimeException e) {
      listener.onStoreCall(call.policy, System.nanoTime() - start, e);
      throw new StoreFailure(SqlFailure.reason(e), e);
    }
  }

  private String policyId(Policy p) {
    return p.name().equals(policy.name()) ? defaultPolicyId : StoredId.policy(p.name());
  }

  private Decision acquireStatement(Connection c, Call call, Policy p, int alg) throws SQLException {
    Algorithm a = p.algorithm();
    String pid = policyId(p);
    String kid = StoredId.key(p.name(), call.key);
    PostgresSql.Bound sql = acquireSql[alg];
    Outcome out = new Outcome();
    try (PreparedStatement ps = c.prepareStatement(sql.sql)) {
      for (int attempt = 1; ; attempt++) {
        bind(ps, sql, call, pid, kid, alg, a, call.permits, 0);
        try (ResultSet rs = mainResult(ps)) {
          rs.next();
          long now = rs.getLong(1);
          boolean upPinned = rs.getBoolean(8);
          if (!rs.wasNull()) {
            // Allowed and written: the decision fields are those of a peek of the new state at the same instant.
            Policy eff = upPinned ? pinnedPolicy(p, alg, rs.getLong(5), rs.getLong(6), rs.getLong(7)) : p;
            long[] st = {rs.getLong(2), rs.getLong(3), rs.getLong(4)};
            ReferenceModel.peek(eff.algorithm(), st, now, out);
            long stamp = alg == PostgresSql.ALG_FIXED || alg == PostgresSql.ALG_SLIDING ? st[0] : 0;
            return Decision.allowed(eff, out.remaining(), out.resetAt(), new Ticket(eff, call.key, call.permits, stamp));
          }
          // Nothing written: a refusal, a malformed row, or a row pinned to another algorithm.
          Snapshot snap = Snapshot.read(rs, 9);
          if (snap != null && !snap.wellFormed()) {
            throw new StoreFailure(Reason.CORRUPT_STATE, null);
          }
          Policy eff = p;
          if (snap != null && snap.pinned) {
            eff = pinnedPolicy(p, snap.alg, snap.p1, snap.p2, snap.p3);
            if (snap.alg != alg) {
              if (call.permits <= eff.limit()) {
                return acquireStatement(c, call, eff, snap.alg);
              }
              // More permits than the override can ever grant: refuse without writing.
            }
          }
          long[] st = snap != null && snap.alg == code(eff.algorithm()) ? snap.state() : new long[3];
          ReferenceModel.acquire(eff.algorithm(), st, now, call.permits, out);
          if (!out.allowed()) {
            return Decision.refused(eff, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
          }
          // The statement's snapshot predates a concurrent write that took the last permits: the
          // refusal is right, its fields are stale. Ask again (rare; bounded by count and deadline).
          if (attempt >= RACE_ATTEMPTS || System.nanoTime() - call.deadline >= 0) {
            return Decision.refused(eff, Reason.LIMIT_EXCEEDED, 0, out.resetAt(), 0);
          }
        }
      }
    }
  }

  private Decision peekStatement(Call call) throws SQLException {
    Policy p = call.policy;
    String pid = policyId(p);
    String kid = StoredId.key(p.name(), call.key);
    try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(peekSql.sql)) {
      bind(ps, peekSql, call, pid, kid, call.alg, p.algorithm(), 1, 0);
      try (ResultSet rs = mainResult(ps)) {
        rs.next();
        long now = rs.getLong(1);
        Snapshot snap = Snapshot.read(rs, 2);
        if (snap != null && !snap.wellFormed()) {
          throw new StoreFailure(Reason.CORRUPT_STATE, null);
        }
        Policy eff = snap != null && snap.pinned ? pinnedPolicy(p, snap.alg, snap.p1, snap.p2, snap.p3) : p;
        long[] st = snap != null && snap.alg == code(eff.algorithm()) ? snap.state() : new long[3];
        Outcome out = new Outcome();
        ReferenceModel.peek(eff.algorithm(), st, now, out);
        return out.allowed()
            ? Decision.allowed(eff, out.remaining(), out.resetAt(), null)
            : Decision.refused(eff, Reason.LIMIT_EXCEEDED, out.remaining(), out.resetAt(), out.retryAfter());
      }
    }
  }

  @Override public Refund refund(Ticket ticket) {
    if (ticket == null) {
      return Refund.NO_EFFECT; // refund never throws
    }
    Policy p = ticket.policy();
    if (p.algorithm() instanceof Algorithm.SlidingLog) {
      return reportRefund(p, Refund.NO_EFFECT); // never counted here
    }
    int alg = code(p.algorithm());
    if (!ticket.spend()) {
      return reportRefund(p, Refund.NO_EFFECT);
    }
    Call call = new Call(Op.REFUND, p, ticket.key(), ticket.permits(), alg,
        tenant == null ? "" : tenantValue(), System.nanoTime() + timeoutNanos);
    if (ticker != null) {
      call.now = ticker.nowMicros();
      if (call.now <= 0) {
        ticket.unspend();
        return reportRefund(p, Refund.FAILED);
      }
    }
    Refund result;
    try {
      CompletableFuture<Refund> f = CompletableFuture.supplyAsync(() -> refundTask(call, ticket.stamp()), executor);
      result = f.get(Math.max(0, call.deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      result = Refund.FAILED;
    } catch (TimeoutException | ExecutionException | RejectedExecutionException e) {
      result = Refund.FAILED;
    }
    if (result == Refund.FAILED) {
      // Stricter, never weaker: the permits stay counted, and the ticket may be tried again.
      ticket.unspend();
    }
    return reportRefund(p, result);
  }

  private Refund reportRefund(Policy p, Refund r) {
    listener.onRefund(p, r);
    return r;
  }

  private Refund refundTask(Call call, long stamp) {
    if (System.nanoTime() - call.deadline >= 0) {
      return Refund.FAILED;
    }
    Policy p = call.policy;
    long start = System.nanoTime();
    PostgresSql.Bound sql = refundSql[call.alg];
    try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(sql.sql)) {
      bind(ps, sql, call, policyId(p), StoredId.key(p.name(), call.key), call.alg, p.algorithm(), call.permits, stamp);
      try (ResultSet rs = mainResult(ps)) {
        listener.onStoreCall(p, System.nanoTime() - start, null);
        return rs.next() ? Refund.APPLIED : Refund.NO_EFFECT;
      }
    } catch (SQLException | RuntimeException e) {
      listener.onStoreCall(p, System.nanoTime() - start, e);
      LOG.log(System.Logger.Level.WARNING, "refund failed; the permits stay counted", e);
      return Refund.FAILED;
    }
  }

  /**
   * Forgets {@code key} under {@code policy}: deletes its row (an overridden key keeps its override and
   * starts with a fresh state). A store failure is logged and reported to the listener, never thrown:
   * the key then simply keeps its count.
   */
  @Override public void reset(String key, Policy policy) {
    Checks.notNull("policy", policy);
    Checks.key(key);
    Call call = new Call(Op.RESET, policy, key, 1, code(policy.algorithm()),
        tenant == null ? "" : tenantValue(), System.nanoTime() + timeoutNanos);
    call.now = ticker != null ? Math.max(1, ticker.nowMicros()) : 0;
    try {
      CompletableFuture.runAsync(() -> {
        long start = System.nanoTime();
        try {
          update(resetSql, call);
          listener.onStoreCall(policy, System.nanoTime() - start, null);
        } catch (SQLException e) {
          listener.onStoreCall(policy, System.nanoTime() - start, e);
          throw new IllegalStateException(e);
        }
      }, executor).get(Math.max(0, call.deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (TimeoutException | ExecutionException | RejectedExecutionException e) {
      LOG.log(System.Logger.Level.WARNING, "reset of a key under policy '" + policy.name() + "' failed; the key keeps its state", e);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Per-account configuration.
  // ---------------------------------------------------------------------------------------------

  /**
   * Pins {@code policy}'s algorithm as the configuration of {@code key} under {@code policy.name()}:
   * from now on every check of that key under that policy name is decided with these limits,
   * whatever policy the caller passes, until {@link #clearOverride}. The count is kept when the
   * algorithm and its time unit are unchanged (a bucket's tokens capped at the new capacity);
   * otherwise the key starts fresh. An account with no row is provisioned with the override.
   *
   * @throws SQLException when the store fails (an administrative call; decisions never throw)
   */
  public void override(String key, Policy policy) throws SQLException {
    Checks.notNull("policy", policy);
    Checks.key(key);
    Call call = new Call(Op.ADMIN, policy, key, 1, code(policy.algorithm()),
        tenant == null ? "" : tenantValue(), System.nanoTime() + timeoutNanos);
    call.now = ticker != null ? Math.max(1, ticker.nowMicros()) : 0;
    update(overrideSql, call);
  }

  /**
   * Removes the override of {@code key} under {@code policy.name()}: the caller's policy decides it
   * again. Returns whether there was one.
   */
  public boolean clearOverride(String key, Policy policy) throws SQLException {
    Checks.notNull("policy", policy);
    Checks.key(key);
    Call call = new Call(Op.ADMIN, policy, key, 1, code(policy.algorithm()),
        tenant == null ? "" : tenantValue(), System.nanoTime() + timeoutNanos);
    return update(clearOverrideSql, call) > 0;
  }

  // ---------------------------------------------------------------------------------------------
  // Schema and sweep.
  // ---------------------------------------------------------------------------------------------

  /**
   * Creates the table (and, in tenant mode, its row-level security policy) if absent: the DDL of
   * {@code schema.sql} (and {@code schema-tenant.sql}) with the configured table name. Idempotent;
   * serialized across processes by a transaction-scoped advisory lock. Needs a role allowed to
   * create tables.
   */
  public void applySchema() throws SQLException {
    String ddl = ddl(table, tenant != null);
    try (Connection c = dataSource.getConnection()) {
      boolean auto = c.getAutoCommit();
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_advisory_xact_lock(hashtext('sluice schema " + table + "'))");
        s.execute(ddl);
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(auto);
      }
    }
  }

  /**
   * The schema version of the table, from its comment ({@code sluice schema N}); 0 when the table
   * does not exist or carries no Sluice comment. Compare with {@link #SCHEMA_VERSION} before a
   * migration.
   */
  public int schemaVersion() throws SQLException {
    try (Connection c = dataSource.getConnection();
         PreparedStatement ps = c.prepareStatement("SELECT obj_description(to_regclass(?), 'pg_class')")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        String comment = rs.next() ? rs.getString(1) : null;
        if (comment == null || !comment.startsWith("sluice schema ")) {
          return 0;
        }
        try {
          return Integer.parseInt(comment.substring("sluice schema ".length()).trim());
        } catch (NumberFormatException e) {
          return 0;
        }
      }
    }
  }

  /** The DDL that {@link #applySchema()} runs for {@code table} (tenant mode adds row-level security). */
  public static String ddl(String table, boolean tenantMode) {
    checkTable(table);
    String ddl = resource("schema.sql") + (tenantMode ? "\n" + resource("schema-tenant.sql") : "");
    return ddl.replace(DEFAULT_TABLE, table);
  }

  private static String resource(String name) {
    try (InputStream in = JdbcRateLimiter.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource dev/sluice/jdbc/" + name + " is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read resource " + name, e);
    }
  }

  /** {@link #sweep(int)} with batches of {@value #DEFAULT_SWEEP_BATCH} rows. */
  public SweepResult sweep() throws SQLException {
    return sweep(DEFAULT_SWEEP_BATCH, null);
  }

  /**
   * Deletes expired rows in batches of at most {@code batchSize}: each batch reads expired rows in
   * primary-key order and deletes each only if its version is unchanged since it was read (a decision
   * that wrote it in between wins). Malformed rows are kept and counted. Overridden (pinned) rows are
   * configuration and are never swept. In tenant mode only the current tenant's rows are visible;
   * sweep every tenant with a plain-mode limiter on a role that bypasses row-level security.
   *
   * @throws SQLException when the store fails; rows already deleted stay deleted
   */
  public SweepResult sweep(int batchSize) throws SQLException {
    return sweep(batchSize, null);
  }

  /** {@link #sweep(int)} with a hook run between each batch's read and delete (tests). */
  SweepResult sweep(int batchSize, Runnable betweenReadAndDelete) throws SQLException {
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize " + batchSize + " is not positive; it must be at least 1");
    }
    String t = tenant == null ? "" : tenantValue();
    String ct = "", cp = "", ck = "";
    long deleted = 0, malformed = 0, changed = 0;
    int batches = 0;
    try (Connection c = connection()) {
      while (true) {
        List<String> ts = new ArrayList<>(), ps = new ArrayList<>(), ks = new ArrayList<>();
        List<Long> vs = new ArrayList<>();
        int read = 0;
        try (PreparedStatement st = c.prepareStatement(sweepReadSql.sql)) {
          for (int i = 0; i < sweepReadSql.names.length; i++) {
            switch (sweepReadSql.names[i]) {
              case "now" -> st.setLong(i + 1, ticker != null ? ticker.nowMicros() : 0);
              case "tenant" -> st.setString(i + 1, t);
              case "ctenant" -> st.setString(i + 1, ct);
              case "cpid" -> st.setString(i + 1, cp);
              case "ckid" -> st.setString(i + 1, ck);
              case "limit" -> st.setInt(i + 1, batchSize);
              default -> throw new IllegalStateException(sweepReadSql.names[i]);
            }
          }
          try (ResultSet rs = mainResult(st)) {
            while (rs.next()) {
              read++;
              ct = rs.getString(1);
              cp = rs.getString(2);
              ck = rs.getString(3);
              if (!rs.getBoolean(5)) {
                malformed++;
                continue;
              }
              ts.add(ct);
              ps.add(cp);
              ks.add(ck);
              vs.add(rs.getLong(4));
            }
          }
        }
        batches++;
        if (betweenReadAndDelete != null) {
          betweenReadAndDelete.run();
        }
        if (!ts.isEmpty()) {
          try (PreparedStatement st = c.prepareStatement(sweepDeleteSql.sql)) {
            for (int i = 0; i < sweepDeleteSql.names.length; i++) {
              switch (sweepDeleteSql.names[i]) {
                case "tenant" -> st.setString(i + 1, t);
                case "tenants" -> st.setArray(i + 1, c.createArrayOf("text", ts.toArray()));
                case "pids" -> st.setArray(i + 1, c.createArrayOf("text", ps.toArray()));
                case "kids" -> st.setArray(i + 1, c.createArrayOf("text", ks.toArray()));
                case "versions" -> st.setArray(i + 1, c.createArrayOf("bigint", vs.toArray()));
                default -> throw new IllegalStateException(sweepDeleteSql.names[i]);
              }
            }
            int n = updateCount(st);
            deleted += n;
            changed += ts.size() - n;
          }
        }
        if (read < batchSize) {
          return new SweepResult(deleted, malformed, changed, batches);
        }
      }
    }
  }

  /** Stops the limiter's own executor (a supplied executor and the DataSource are the caller's). */
  @Override public void close() {
    if (ownExecutor != null) {
      ownExecutor.shutdown();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // JDBC plumbing.
  // ---------------------------------------------------------------------------------------------

  private Connection connection() throws SQLException {
    Connection c = dataSource.getConnection();
    try {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      // Bounds a read from a server that stopped answering (the caller has its deadline already;
      // this frees the worker). The pool restores its own value when the connection is returned.
      try {
        c.setNetworkTimeout(DIRECT, networkTimeoutMillis);
      } catch (java.sql.SQLFeatureNotSupportedException | AbstractMethodError unsupported) {
        // a driver without network timeouts: the caller's deadline still holds, the worker waits longer
      }
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  private int update(PostgresSql.Bound sql, Call call) throws SQLException {
    Policy p = call.policy;
    try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(sql.sql)) {
      bind(ps, sql, call, policyId(p), StoredId.key(p.name(), call.key), call.alg, p.algorithm(), call.permits, 0);
      return updateCount(ps);
    }
  }

  /** Executes and returns the result set of the main statement (after tenant mode's set_config). */
  private ResultSet mainResult(PreparedStatement ps) throws SQLException {
    ps.execute();
    if (tenant != null) {
      ps.getMoreResults();
    }
    return ps.getResultSet();
  }

  private int updateCount(PreparedStatement ps) throws SQLException {
    ps.execute();
    if (tenant != null) {
      ps.getMoreResults();
    }
    return ps.getUpdateCount();
  }

  private static void bind(PreparedStatement ps, PostgresSql.Bound sql, Call call, String pid, String kid, int alg,
                           Algorithm a, long n, long stamp) throws SQLException {
    String[] names = sql.names;
    for (int i = 0; i < names.length; i++) {
      int j = i + 1;
      switch (names[i]) {
        case "now" -> ps.setLong(j, call.now);
        case "tenant" -> ps.setString(j, call.tenant);
        case "pid" -> ps.setString(j, pid);
        case "kid" -> ps.setString(j, kid);
        case "alg" -> ps.setShort(j, (short) alg);
        case "p1" -> ps.setLong(j, param(a, 1));
        case "p2" -> ps.setLong(j, param(a, 2));
        case "p3" -> ps.setLong(j, param(a, 3));
        case "n" -> ps.setLong(j, n);
        case "stamp" -> ps.setLong(j, stamp);
        default -> throw new IllegalStateException("unbound parameter " + names[i]);
      }
    }
  }

  static int code(Algorithm a) {
    if (a instanceof Algorithm.FixedWindow) {
      return PostgresSql.ALG_FIXED;
    } else if (a instanceof Algorithm.SlidingWindow) {
      return PostgresSql.ALG_SLIDING;
    } else if (a instanceof Algorithm.TokenBucket) {
      return PostgresSql.ALG_BUCKET;
    } else if (a instanceof Algorithm.Gcra) {
      return PostgresSql.ALG_GCRA;
    }
    throw new IllegalArgumentException("algorithm " + a.id() + " is not supported by the PostgreSQL backend: the exact "
        + "sliding log keeps one entry per admitted permit and does not fit a row; use Policy.slidingWindow "
        + "(the two-window weighted counter) or the memory tier");
  }

  /** The row's p1..p3 of an algorithm (see schema.sql). */
  static long param(Algorithm a, int i) {
    if (a instanceof Algorithm.FixedWindow fw) {
      return i == 1 ? fw.limit() : i == 2 ? fw.windowMicros() : 0;
    } else if (a instanceof Algorithm.SlidingWindow sw) {
      return i == 1 ? sw.limit() : i == 2 ? sw.windowMicros() : 0;
    } else if (a instanceof Algorithm.TokenBucket tb) {
      return i == 1 ? tb.capacity() : i == 2 ? tb.refillTokens() : tb.refillPeriodMicros();
    } else if (a instanceof Algorithm.Gcra g) {
      return i == 1 ? g.rate() : i == 2 ? g.periodMicros() : g.burst();
    }
    throw new IllegalArgumentException("algorithm " + a.id());
  }

  /** The algorithm a row's p1..p3 describe; {@link IllegalArgumentException} when they are invalid. */
  static Algorithm algorithm(int alg, long p1, long p2, long p3) {
    return switch (alg) {
      case PostgresSql.ALG_FIXED -> new Algorithm.FixedWindow(p1, p2);
      case PostgresSql.ALG_SLIDING -> new Algorithm.SlidingWindow(p1, p2);
      case PostgresSql.ALG_BUCKET -> new Algorithm.TokenBucket(p1, p2, p3);
      case PostgresSql.ALG_GCRA -> new Algorithm.Gcra(p1, p2, p3);
      default -> throw new IllegalArgumentException("algorithm code " + alg);
    };
  }

  private static Policy pinnedPolicy(Policy p, int alg, long p1, long p2, long p3) {
    Algorithm a = algorithm(alg, p1, p2, p3);
    return a.equals(p.algorithm()) ? p : new Policy(p.name(), a);
  }

  private static void checkTable(String table) {
    if (table == null || !TABLE.matcher(table).matches()) {
      throw new IllegalArgumentException("table " + (table == null ? "null" : Checks.quote(table))
          + " is not a plain SQL identifier; use letters, digits and '_' (optionally schema.table), at most 63 each");
    }
  }

  private static ExecutorService defaultExecutor() {
    AtomicInteger n = new AtomicInteger();
    ThreadPoolExecutor e = new ThreadPoolExecutor(16, 16, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(4_096), r -> {
      Thread t = new Thread(r, "sluice-jdbc-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    e.allowCoreThreadTimeOut(true);
    return e;
  }

  /** The same predicate as {@link PostgresSql#wellFormed}, over a row read by a statement. */
  static boolean wellFormed(int alg, boolean pinned, long p1, long p2, long p3, long s0, long s1, long s2) {
    long max = PostgresSql.MAX_STATE;
    if (alg < 1 || alg > 4 || s0 < 0 || s1 < 0 || s2 < 0 || s0 > max || s1 > max || s2 > max) {
      return false;
    }
    if (s0 == 0 && (s1 != 0 || s2 != 0)) {
      return false;
    }
    if (alg != PostgresSql.ALG_SLIDING && s2 != 0) {
      return false;
    }
    if (pinned) {
      try {
        algorithm(alg, p1, p2, p3);
      } catch (IllegalArgumentException e) {
        return false;
      }
    }
    return true;
  }

  private enum Op { ACQUIRE, PEEK, REFUND, RESET, ADMIN }

  /** A store failure on the way from the worker to the waiting caller; no stack trace (it is expected). */
  private static final class StoreFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final Reason reason;

    StoreFailure(Reason reason, Throwable cause) {
      super(reason.name(), cause, false, false);
      this.reason = reason;
    }
  }

  /** One call's inputs, read on the caller's thread. */
  private static final class Call {
    final Op op;
    final Policy policy;
    final String key;
    final long permits;
    final int alg;
    final String tenant;
    final long deadline;
    long now;
    boolean invalidClock;

    Call(Op op, Policy policy, String key, long permits, int alg, String tenant, long deadline) {
      this.op = op;
      this.policy = policy;
      this.key = key;
      this.permits = permits;
      this.alg = alg;
      this.tenant = tenant;
      this.deadline = deadline;
    }
  }

  /** A row as of the statement's snapshot. */
  private record Snapshot(int alg, boolean pinned, long p1, long p2, long p3, long s0, long s1, long s2) {
    static Snapshot read(ResultSet rs, int col) throws SQLException {
      int alg = rs.getShort(col);
      if (rs.wasNull()) {
        return null;
      }
      return new Snapshot(alg, rs.getBoolean(col + 1), rs.getLong(col + 2), rs.getLong(col + 3), rs.getLong(col + 4),
          rs.getLong(col + 5), rs.getLong(col + 6), rs.getLong(col + 7));
    }

    boolean wellFormed() {
      return JdbcRateLimiter.wellFormed(alg, pinned, p1, p2, p3, s0, s1, s2);
    }

    long[] state() {
      return new long[] {s0, s1, s2};
    }
  }

  /** Builds a {@link JdbcRateLimiter}; every setting is validated when set. */
  public static final class Builder {
    private final Policy policy;
    private final DataSource dataSource;
    private Duration timeout = Duration.ofMillis(DEFAULT_TIMEOUT_MILLIS);
    private FailureMode failureMode = FailureMode.closed();
    private Ticker ticker;
    private String table = DEFAULT_TABLE;
    private Supplier<String> tenant;
    private boolean relaxedDurability;
    private Executor executor;
    private RateLimitListener listener = RateLimitListener.NONE;
    private boolean includeKeys;

    private Builder(Policy policy, DataSource dataSource) {
      this.policy = Checks.notNull("policy", policy);
      this.dataSource = Checks.notNull("dataSource", dataSource);
      code(policy.algorithm());
    }

    /**
     * The deadline of one call, connection acquisition and statement together (default
     * {@value JdbcRateLimiter#DEFAULT_TIMEOUT_MILLIS} ms). At least 1 ms.
     */
    public Builder timeout(Duration timeout) {
      this.timeout = Checks.atLeastOneMilli("timeout", timeout, "give the store at least Duration.ofMillis(1)");
      return this;
    }

    /** What a call decides when the store fails or times out (default {@link FailureMode#closed()}). */
    public Builder failureMode(FailureMode failureMode) {
      this.failureMode = Checks.notNull("failureMode", failureMode);
      return this;
    }

    /**
     * Takes time from {@code ticker} (epoch microseconds, sent with each statement) instead of the
     * database server's {@code clock_timestamp()} (the default: one clock for every instance).
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** The table (default {@value JdbcRateLimiter#DEFAULT_TABLE}); a plain identifier, optionally schema-qualified. */
    public Builder table(String table) {
      checkTable(table);
      this.table = table;
      return this;
    }

    /**
     * Tenant mode: every statement first binds {@code currentTenant.get()} to its transaction with
     * {@code set_config('sluice.tenant', tenant, true)}, in the same round trip, and the table's
     * row-level security policy ({@code schema-tenant.sql}) confines it to that tenant's rows. The
     * supplier is read on the caller's thread for every call.
     */
    public Builder tenant(Supplier<String> currentTenant) {
      this.tenant = Checks.notNull("currentTenant", currentTenant);
      return this;
    }

    /**
     * When true, each write commits with {@code synchronous_commit = off} (set for its own
     * transaction only, inside the statement): no wait for the WAL flush, so a crash of the database
     * server can lose the last moments of counts (never corrupt them). Default false: every
     * decision commits durably.
     */
    public Builder relaxedDurability(boolean relaxed) {
      this.relaxedDurability = relaxed;
      return this;
    }

    /**
     * Runs the JDBC work of every call (sync and async) on {@code executor}; the caller waits at most
     * the deadline. Default: the limiter's own pool of 16 daemon threads, stopped by {@link #close()}.
     * Size it like the connection pool; it must not run tasks on the calling thread, or the deadline
     * cannot be held.
     */
    public Builder asyncExecutor(Executor executor) {
      this.executor = Checks.notNull("executor", executor);
      return this;
    }

    /** Told about decisions, refunds and store calls; keys only when {@code includeKeys}. */
    public Builder listener(RateLimitListener listener, boolean includeKeys) {
      this.listener = Checks.notNull("listener", listener);
      this.includeKeys = includeKeys;
      return this;
    }

    public JdbcRateLimiter build() {
      return new JdbcRateLimiter(this);
    }
  }
}

package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.internal.Checks;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.PostgresCall.Op;
import dev.sluice.model.ReferenceModel;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
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

  private final Policy policy;
  private final DataSource dataSource;
  private final long timeoutNanos;
  private final Ticker ticker;
  private final String table;
  private final Supplier<String> tenant;
  private final ExecutorService ownExecutor;
  private final PostgresStatements statements;
  private final CallRunner runner;
  private final PostgresSweep sweeper;

  private JdbcRateLimiter(Builder b) {
    this.policy = b.policy;
    this.dataSource = b.dataSource;
    this.timeoutNanos = b.timeout.toNanos();
    this.ticker = b.ticker;
    this.table = b.table;
    this.tenant = b.tenant;
    this.ownExecutor = b.executor == null ? defaultExecutor() : null;
    PostgresSql sql = new PostgresSql(table, ticker != null, b.relaxedDurability, tenant != null);
    this.statements = new PostgresStatements(dataSource, b.timeout, sql, policy, tenant != null);
    this.runner = new CallRunner(statements, b.executor != null ? b.executor : ownExecutor, b.failureMode, ticker,
        RateLimitListener.guarded(b.listener, b.includeKeys));
    this.sweeper = new PostgresSweep(statements, sql, ticker);
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
  // Decisions: validated on the caller's thread, run on the executor, answered by the deadline.
  // ---------------------------------------------------------------------------------------------

  @Override public Decision tryAcquire(String key, long permits, Policy policy) {
    return runner.decide(call(key, permits, policy, Op.ACQUIRE));
  }

  @Override public CompletionStage<Decision> tryAcquireAsync(String key, long permits, Policy policy) {
    return runner.async(call(key, permits, policy, Op.ACQUIRE));
  }

  @Override public Decision peek(String key, Policy policy) {
    return runner.decide(call(key, 1, policy, Op.PEEK));
  }

  /** Asynchronous {@link #peek(String, Policy)}, on the limiter's executor, completing within the deadline. */
  public CompletionStage<Decision> peekAsync(String key, Policy policy) {
    return runner.async(call(key, 1, policy, Op.PEEK));
  }

  private PostgresCall call(String key, long permits, Policy p, Op op) {
    Checks.notNull("policy", p);
    Checks.key(key);
    Checks.permits(permits, p.limit(), p.name());
    PostgresCall c = newCall(op, p, key, permits);
    if (ticker != null) {
      c.now = ticker.nowMicros();
      c.invalidClock = !plausible(c.now);
    }
    return c;
  }

  /**
   * A ticker reading the rows can hold: epoch microseconds in 1..2^52 (the year 2112), the core's
   * bound of a state word. Anything else is refused with {@link Reason#INVALID_CLOCK} before any
   * statement, as the Redis backend and the versioned-store engine refuse it.
   */
  private static boolean plausible(long now) {
    return now > 0 && now <= Checks.MAX_EXACT;
  }

  /** A call of {@code op} with the current tenant, whose deadline starts now. */
  private PostgresCall newCall(Op op, Policy p, String key, long permits) {
    return new PostgresCall(op, p, key, permits, PostgresRow.code(p.algorithm()), tenant == null ? "" : tenantValue(),
        System.nanoTime() + timeoutNanos);
  }

  private String tenantValue() {
    String t = tenant.get();
    if (t == null || t.isBlank()) {
      throw new IllegalArgumentException("tenant " + (t == null ? "null" : Checks.quote(t))
          + " is blank; tenant mode needs the current tenant from the supplier given to tenant(...)");
    }
    return t;
  }

  @Override public Refund refund(Ticket ticket) {
    if (ticket == null) {
      return Refund.NO_EFFECT; // refund never throws
    }
    Policy p = ticket.policy();
    if (p.algorithm() instanceof Algorithm.SlidingLog) {
      return runner.reportRefund(p, Refund.NO_EFFECT); // never counted here
    }
    if (!ticket.spend()) {
      return runner.reportRefund(p, Refund.NO_EFFECT);
    }
    PostgresCall call = newCall(Op.REFUND, p, ticket.key(), ticket.permits());
    if (ticker != null) {
      call.now = ticker.nowMicros();
      if (!plausible(call.now)) {
        ticket.unspend();
        return runner.reportRefund(p, Refund.FAILED);
      }
    }
    return runner.refund(call, ticket);
  }

  /**
   * Forgets {@code key} under {@code policy}: deletes its row (an overridden key keeps its override and
   * starts with a fresh state). A store failure is logged and reported to the listener, never thrown:
   * the key then simply keeps its count.
   */
  @Override public void reset(String key, Policy policy) {
    runner.reset(adminCall(Op.RESET, key, policy));
  }

  /** A validated call of {@code op} on {@code key}, at the ticker's time (at least 1) or the server's. */
  private PostgresCall adminCall(Op op, String key, Policy policy) {
    Checks.notNull("policy", policy);
    Checks.key(key);
    PostgresCall call = newCall(op, policy, key, 1);
    call.now = ticker != null ? Math.max(1, ticker.nowMicros()) : 0;
    return call;
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
    statements.override(adminCall(Op.ADMIN, key, policy));
  }

  /**
   * Removes the override of {@code key} under {@code policy.name()}: the caller's policy decides it
   * again. Returns whether there was one.
   */
  public boolean clearOverride(String key, Policy policy) throws SQLException {
    return statements.clearOverride(adminCall(Op.ADMIN, key, policy));
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
    PostgresSchema.apply(dataSource, table, tenant != null);
  }

  /**
   * The schema version of the table, from its comment ({@code sluice schema N}); 0 when the table
   * does not exist or carries no Sluice comment. Compare with {@link #SCHEMA_VERSION} before a
   * migration.
   */
  public int schemaVersion() throws SQLException {
    return PostgresSchema.version(dataSource, table);
  }

  /** The DDL that {@link #applySchema()} runs for {@code table} (tenant mode adds row-level security). */
  public static String ddl(String table, boolean tenantMode) {
    return PostgresSchema.ddl(table, tenantMode);
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
    return sweeper.sweep(batchSize, tenant == null ? "" : tenantValue(), betweenReadAndDelete);
  }

  /** Stops the limiter's own executor (a supplied executor and the DataSource are the caller's). */
  @Override public void close() {
    if (ownExecutor != null) {
      ownExecutor.shutdown();
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
      PostgresRow.code(policy.algorithm());
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
     * database server's {@code clock_timestamp()} (the default: one clock for every instance). A
     * reading outside 1..2^52 is refused with {@link Reason#INVALID_CLOCK} before any statement.
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Checks.notNull("ticker", ticker);
      return this;
    }

    /** The table (default {@value JdbcRateLimiter#DEFAULT_TABLE}); a plain identifier, optionally schema-qualified. */
    public Builder table(String table) {
      PostgresSchema.checkTable(table);
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

package dev.sluice.jdbc;

import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import dev.sluice.internal.AdminCalls;
import dev.sluice.internal.Checks;
import dev.sluice.jdbc.PostgresCall.Op;
import dev.sluice.jdbc.internal.DeadlineTask;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.ForwardingStoreRateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import dev.sluice.store.SweepResult;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * A rate limiter whose state lives in a PostgreSQL table and whose every decision is one SQL
 * statement: {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING}, in autocommit. The
 * statement computes exactly the step of {@link ReferenceModel} (same state, same integer
 * arithmetic), on the row it locked, so two racing consumers of the last permit resolve to exactly
 * one winner; a refusal writes nothing. Concurrent acquires of one key in this process are coalesced
 * ({@link Builder#maxBatch}, default {@value StoreRateLimiter#MAX_BATCH}, 1 turns it off): one
 * statement ({@code PostgresSql.batch}) decides a batch in arrival order, each request exactly as the
 * model decides it after the ones before it; in tenant mode a batch holds one tenant's requests and
 * runs under that tenant.
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
 * misses it is decided by the {@link dev.sluice.FailureMode} with {@link Reason#TIMEOUT}; a store error with
 * {@link Reason#STORE_UNAVAILABLE}; a malformed row always fails closed with
 * {@link Reason#CORRUPT_STATE}. Nothing but programmer errors ({@link IllegalArgumentException}) is
 * ever thrown from a decision.
 *
 * <p><b>Identity.</b> Rows are keyed by {@code StoredId.policy} and {@code StoredId.key}: neither
 * the policy name nor the key is ever written.
 *
 * <p>The exact sliding log is refused: its state grows with the limit and does not fit a row.
 *
 * <p>Validation, the clock, deadlines, the failure mode, tickets and listener events are the core's
 * one pipeline ({@link StoreRateLimiter}), the same as Redis's, around this module's backend (the
 * statements); this class adds the table's administration: schema, sweep, per-account overrides.
 */
public final class JdbcRateLimiter extends ForwardingStoreRateLimiter implements KeyOverrides {
  /** The default deadline of one call, in milliseconds. */
  public static final long DEFAULT_TIMEOUT_MILLIS = 500;
  /** The default and largest {@code maxBatch}: {@link StoreRateLimiter#MAX_BATCH}. */
  public static final int MAX_BATCH = StoreRateLimiter.MAX_BATCH;
  /** The default table name. */
  public static final String DEFAULT_TABLE = "sluice_rate_limit";
  /** The schema version of {@code schema.sql}, also written in the table's comment. */
  public static final int SCHEMA_VERSION = 1;
  /** Rows one sweep batch reads and deletes at most. */
  public static final int DEFAULT_SWEEP_BATCH = 1_000;

  private final DataSource dataSource;
  private final String table;
  private final boolean tenantMode;
  private final long timeoutNanos;
  private final PostgresStatements statements;
  private final PostgresSweep sweeper;
  final PostgresBackend backend; // package-private for tests: its steps

  private JdbcRateLimiter(Builder b, Policy policy, Ticker ticker, Duration timeout, PostgresBackend backend) {
    super(b.pipelineOf(backend));
    this.backend = backend;
    this.dataSource = b.dataSource;
    this.table = b.table;
    this.tenantMode = b.tenant != null;
    this.timeoutNanos = timeout.toNanos();
    this.statements = backend.statements;
    this.sweeper = new PostgresSweep(statements, backend.sql, ticker);
  }

  /** A builder for a limiter whose default policy is {@code policy}, over {@code dataSource}. */
  public static Builder builder(Policy policy, DataSource dataSource) {
    return new Builder(policy, dataSource);
  }

  /** The table this limiter reads and writes. */
  public String table() {
    return table;
  }

  /** A validated administrative call of {@code op} on {@code key}, at the ticker's time (at least 1) or the server's. */
  private PostgresCall adminCall(Op op, String key, Policy policy) {
    Checks.notNull("policy", policy);
    Checks.key(key);
    PostgresCall call = new PostgresCall(op, policy, key, 1, PostgresRow.code(policy.algorithm()), backend.currentTenant(),
        System.nanoTime() + timeoutNanos);
    call.now = backend.now();
    return call;
  }

  // ---------------------------------------------------------------------------------------------
  // Per-account configuration.
  // ---------------------------------------------------------------------------------------------

  /**
   * Pins {@code policy} as {@code key}'s configuration under its name ({@link KeyOverrides#override}).
   *
   * <p>On PostgreSQL the override pins the key's row ({@code pinned}, its {@code p1..p3}): the
   * statement decides with them in the same round trip. The count is kept when the algorithm is
   * unchanged (a bucket's tokens capped at the new capacity); otherwise the key starts fresh. An account with no row is provisioned with the override. A sweep never deletes a pinned
   * row; {@link #reset} keeps the override and clears the count.
   *
   * @throws dev.sluice.spi.StoreException when the store fails (an administrative call; decisions never throw),
   *     with the {@link SQLException} as its cause
   */
  @Override public void override(String key, Policy policy) {
    PostgresCall call = adminCall(Op.ADMIN, key, policy);
    AdminCalls.run("PostgreSQL: override of a key", () -> {
      statements.override(call);
      return null;
    });
  }

  @Override public boolean clearOverride(String key, Policy policy) {
    PostgresCall call = adminCall(Op.ADMIN, key, policy);
    return AdminCalls.run("PostgreSQL: clearing a key's override", () -> statements.clearOverride(call));
  }

  @Override public Optional<Policy> overrideOf(String key, Policy policy) {
    PostgresCall call = adminCall(Op.ADMIN, key, policy);
    return Optional.ofNullable(AdminCalls.run("PostgreSQL: reading a key's override", () -> statements.overrideOf(call)));
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
    PostgresSchema.apply(dataSource, table, tenantMode);
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
    return sweeper.sweep(batchSize, backend.currentTenant(), betweenReadAndDelete);
  }

  /** Stops the limiter's own executor (a supplied executor and the DataSource are the caller's). */
  @Override public void close() {
    super.close();
  }

  /**
   * Builds a {@link JdbcRateLimiter}: the settings of every store-backed limiter ({@code timeout},
   * default {@value JdbcRateLimiter#DEFAULT_TIMEOUT_MILLIS} ms, connection acquisition and statement
   * together; {@code failureMode}; {@code ticker}, default the database's {@code clock_timestamp()};
   * {@code listener}; {@code issuer}) and PostgreSQL's own. Every setting is validated when set.
   */
  public static final class Builder extends StoreRateLimiter.Settings<Builder> {
    private final DataSource dataSource;
    private String table = DEFAULT_TABLE;
    private Supplier<String> tenant;
    private boolean relaxedDurability;
    private Executor executor;

    private Builder(Policy policy, DataSource dataSource) {
      super(policy, Duration.ofMillis(DEFAULT_TIMEOUT_MILLIS));
      this.dataSource = Checks.notNull("dataSource", dataSource);
      PostgresBackend.CAPABILITIES.require(policy);
    }

    @Override protected Builder self() {
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
     * supplier is read on the caller's thread for every call; coalesced acquires share a batch only
     * with the same tenant's, and the batch's statement runs under it.
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

    public JdbcRateLimiter build() {
      Ticker ticker = suppliedTicker();
      Duration timeout = timeout();
      boolean tenantMode = tenant != null;
      ExecutorService ownExecutor = executor == null ? DeadlineTask.workers("sluice-jdbc") : null;
      PostgresSql sql = new PostgresSql(table, ticker != null, relaxedDurability, tenantMode);
      PostgresStatements statements = new PostgresStatements(dataSource, timeout, sql, policy, tenantMode);
      String description = "JdbcRateLimiter[policy=" + policy.name() + ", table=" + table + ", timeout=" + timeout
          + ", clock=" + (ticker == null ? "database" : "supplied") + (tenantMode ? ", tenant mode" : "") + "]";
      PostgresBackend backend = new PostgresBackend(statements, sql, tenant, executor != null ? executor : ownExecutor,
          ownExecutor, ticker, description);
      return new JdbcRateLimiter(this, policy, ticker, timeout, backend);
    }

    StoreRateLimiter pipelineOf(PostgresBackend backend) {
      return pipeline(backend);
    }
  }
}

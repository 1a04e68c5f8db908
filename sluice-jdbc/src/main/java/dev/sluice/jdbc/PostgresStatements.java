package dev.sluice.jdbc;

import static dev.sluice.jdbc.PostgresRow.ALG_FIXED;

import dev.sluice.Algorithm;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import dev.sluice.internal.ModelSteps;
import dev.sluice.internal.StoredId;
import dev.sluice.jdbc.internal.ConnectionGate;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import dev.sluice.spi.StepResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.Executor;
import javax.sql.DataSource;

/**
 * The JDBC side of one call, on the limiter's executor: borrows a connection, binds a statement's
 * named parameters, runs it and turns its result into a {@link StepResult} with the reference model.
 * A store failure is thrown as {@link SQLException}, a malformed row as {@link StoreFailure} with
 * {@link Reason#CORRUPT_STATE}; the deadline, the failure mode and the listener are the core
 * pipeline's ({@link dev.sluice.spi.StoreRateLimiter}, around {@link PostgresBackend}).
 */
final class PostgresStatements {
  /** Runs the driver's network-timeout callback in place. */
  private static final Executor DIRECT = Runnable::run;
  /** Times an acquire asks again when its snapshot was stale (see {@link PostgresSql}). */
  private static final int RACE_ATTEMPTS = 3;

  private final DataSource dataSource;
  private final ConnectionGate gate;
  private final int networkTimeoutMillis;
  private final boolean tenantMode;
  private final String defaultPolicyName;
  private final String defaultPolicyId;
  private final PostgresSql.Bound[] acquireSql = new PostgresSql.Bound[5];
  private final PostgresSql.Bound[] batchSql = new PostgresSql.Bound[5];
  private final PostgresSql.Bound[] refundSql = new PostgresSql.Bound[5];
  private final PostgresSql.Bound[] overrunSql = new PostgresSql.Bound[5];
  private final PostgresSql.Bound peekSql;
  private final PostgresSql.Bound resetSql;
  private final PostgresSql.Bound overrideSql;
  private final PostgresSql.Bound clearOverrideSql;
  private final PostgresSql.Bound overrideReadSql;

  PostgresStatements(DataSource dataSource, Duration timeout, PostgresSql sql, Policy defaultPolicy, boolean tenantMode) {
    this.dataSource = dataSource;
    this.gate = ConnectionGate.of(dataSource);
    this.networkTimeoutMillis = ConnectionGate.networkTimeoutMillis(timeout.toNanos());
    this.tenantMode = tenantMode;
    this.defaultPolicyName = defaultPolicy.name();
    this.defaultPolicyId = StoredId.policy(defaultPolicy.name());
    for (int alg = ALG_FIXED; alg <= PostgresRow.ALG_GCRA; alg++) {
      acquireSql[alg] = sql.acquire(alg);
      batchSql[alg] = sql.batch(alg);
      refundSql[alg] = sql.refund(alg);
      overrunSql[alg] = sql.overrun(alg);
    }
    this.peekSql = sql.peek();
    this.resetSql = sql.reset();
    this.overrideSql = sql.override();
    this.clearOverrideSql = sql.clearOverride();
    this.overrideReadSql = sql.overrideRead();
  }

  StepResult acquire(PostgresCall call) throws SQLException {
    return onConnection(call, c -> acquire(c, call, call.policy, call.alg));
  }

  private StepResult acquire(Connection c, PostgresCall call, Policy p, int alg) throws SQLException {
    String pid = policyId(p);
    String kid = StoredId.key(p.name(), call.key);
    PostgresSql.Bound sql = acquireSql[alg];
    Outcome out = new Outcome();
    try (PreparedStatement ps = c.prepareStatement(sql.sql)) {
      for (int attempt = 1; ; attempt++) {
        bind(ps, sql, call, pid, kid, alg, p.algorithm(), call.permits, null);
        PostgresSql.AcquireRow row;
        try (ResultSet rs = mainResult(ps)) {
          row = PostgresSql.AcquireRow.read(rs);
        }
        PostgresSql.Written w = row.written();
        if (w != null) {
          // Allowed and written: the decision fields are those of a peek of the new state at the same instant.
          Policy eff = w.pinned() ? PostgresRow.pinnedPolicy(p, alg, w.p1(), w.p2(), w.p3()) : p;
          ReferenceModel.written(eff.algorithm(), new long[] {w.s0(), w.s1(), w.s2()}, row.now(), out);
          return modelResult(out, eff, call.policy);
        }
        // Nothing written: a refusal, a malformed row, or a row pinned to another algorithm.
        PostgresSql.Snapshot snap = wellFormed(row.cur());
        Policy eff = p;
        if (snap != null && snap.pinned()) {
          eff = PostgresRow.pinnedPolicy(p, snap.alg(), snap.p1(), snap.p2(), snap.p3());
          if (snap.alg() != alg) {
            if (call.permits <= eff.limit()) {
              return acquire(c, call, eff, snap.alg());
            }
            // More permits than the override can ever grant: refuse without writing.
          }
        }
        ReferenceModel.acquire(eff.algorithm(), state(snap, eff), row.now(), call.permits, out);
        if (out.corrupt() || out.invalidClock() || !out.allowed()) {
          return modelResult(out, eff, call.policy);
        }
        // The statement's snapshot predates a concurrent write that took the last permits: the
        // refusal is right, its fields are stale. Ask again (rare; bounded by count and deadline).
        if (attempt >= RACE_ATTEMPTS || System.nanoTime() - call.deadline >= 0) {
          return decided(StepResult.decided(false, 0, out.resetAt(), 0, 0, false), eff, call.policy);
        }
      }
    }
  }

  /**
   * A coalesced batch ({@link PostgresSql#batch}): one statement decides every request in order on
   * the row it locked. The verdicts come from the statement; each request's fields from the
   * reference model on the state the statement decided it on, which must give the same verdict and
   * leave the state the statement decided the next one on (else the batch fails closed: the SQL
   * and the model disagree). A row pinned to another algorithm is decided request by request.
   */
  StepResult[] batch(PostgresCall call) throws SQLException {
    return onConnection(call, c -> batch(c, call));
  }

  private StepResult[] batch(Connection c, PostgresCall call) throws SQLException {
    Policy p = call.policy;
    int alg = call.alg;
    long[] ns = call.batch;
    StepResult[] rs = new StepResult[ns.length];
    String pid = policyId(p);
    String kid = StoredId.key(p.name(), call.key);
    PostgresSql.Bound sql = batchSql[alg];
    for (int attempt = 1; ; attempt++) {
      PostgresSql.BatchRows rows;
      try (PreparedStatement ps = c.prepareStatement(sql.sql)) {
        Long[] boxed = new Long[ns.length];
        for (int i = 0; i < ns.length; i++) {
          boxed[i] = ns[i];
        }
        java.sql.Array array = c.createArrayOf("int8", boxed);
        sql.bind(ps, (st, j, name) -> {
          if (name.equals("ns")) {
            st.setArray(j, array);
          } else {
            bindOne(st, j, name, call, pid, kid, alg, p.algorithm(), 0, null);
          }
        });
        try (ResultSet r = mainResult(ps)) {
          rows = PostgresSql.BatchRows.read(r, ns.length);
        }
      }
      if (!rows.wellFormed()) {
        throw new StoreFailure(Reason.CORRUPT_STATE, null);
      }
      Policy eff = rows.pinned() ? PostgresRow.pinnedPolicy(p, rows.alg(), rows.p1(), rows.p2(), rows.p3()) : p;
      if (rows.before() == null) {
        // pinned to another algorithm: each request alone, in order, as the single statement decides it
        for (int i = 0; i < ns.length; i++) {
          PostgresCall one = new PostgresCall(PostgresCall.Op.ACQUIRE, p, call.key, ns[i], alg, call.tenant, call.deadline);
          one.now = call.now;
          rs[i] = acquire(c, one, p, alg);
        }
        return rs;
      }
      boolean admitted = false;
      for (boolean ok : rows.ok()) {
        admitted |= ok;
      }
      if (admitted && !rows.wrote()) {
        // another writer inserted (or the sweep deleted) the row after this statement's snapshot:
        // nothing was written; ask again (rare: bounded by count and deadline)
        if (attempt < RACE_ATTEMPTS && System.nanoTime() - call.deadline < 0) {
          continue;
        }
        Arrays.fill(rs, decided(StepResult.decided(false, 0, 0, 0, 0, false), eff, p));
        return rs;
      }
      Outcome out = new Outcome();
      long[] st = rows.before()[0].clone();
      for (int i = 0; i < ns.length; i++) {
        if (!Arrays.equals(st, rows.before()[i])) {
          Arrays.fill(rs, StepResult.corrupt("the batch statement and the reference model disagree at request " + i));
          return rs;
        }
        ReferenceModel.acquire(eff.algorithm(), st, rows.now(), ns[i], out);
        if (!out.corrupt() && !out.invalidClock() && out.allowed() != rows.ok()[i]) {
          Arrays.fill(rs, StepResult.corrupt("the batch statement and the reference model disagree at request " + i));
          return rs;
        }
        rs[i] = modelResult(out, eff, p);
      }
      return rs;
    }
  }

  StepResult peek(PostgresCall call) throws SQLException {
    Policy p = call.policy;
    PostgresSql.PeekRow row = onConnection(call, c -> {
      try (PreparedStatement ps = c.prepareStatement(peekSql.sql)) {
        bind(ps, peekSql, call, policyId(p), StoredId.key(p.name(), call.key), call.alg, p.algorithm(), 1, null);
        try (ResultSet rs = mainResult(ps)) {
          return PostgresSql.PeekRow.read(rs);
        }
      }
    });
    PostgresSql.Snapshot snap = wellFormed(row.cur());
    Policy eff = snap != null && snap.pinned() ? PostgresRow.pinnedPolicy(p, snap.alg(), snap.p1(), snap.p2(), snap.p3()) : p;
    Outcome out = new Outcome();
    ReferenceModel.peek(eff.algorithm(), state(snap, eff), row.now(), out);
    return modelResult(out, eff, p);
  }

  /**
   * The model's outcome as the step's result ({@link ModelSteps#of}, the one mapping), marked as
   * decided under the key's pinned override when it decided one.
   */
  private static StepResult modelResult(Outcome out, Policy eff, Policy asked) {
    StepResult r = ModelSteps.of(out);
    return r.failure() != null ? r : decided(r, eff, asked);
  }

  /** {@code r}, marked as decided under the key's pinned override when that is not the call's policy. */
  private static StepResult decided(StepResult r, Policy eff, Policy asked) {
    return eff == asked ? r : r.decidedBy(eff);
  }

  /**
   * Gives a ticket's permits back ({@code REFUND}) or charges a settlement's overrun
   * ({@code OVERRUN}), in one statement; whether it applied.
   */
  boolean refund(PostgresCall call, Ticket ticket) throws SQLException {
    Policy p = call.policy;
    PostgresSql.Bound sql = (call.op == PostgresCall.Op.OVERRUN ? overrunSql : refundSql)[call.alg];
    return onConnection(call, c -> {
      try (PreparedStatement ps = c.prepareStatement(sql.sql)) {
        bind(ps, sql, call, policyId(p), StoredId.key(p.name(), call.key), call.alg, p.algorithm(), call.permits, ticket);
        try (ResultSet rs = mainResult(ps)) {
          return PostgresSql.refundApplied(rs);
        }
      }
    });
  }

  void reset(PostgresCall call) throws SQLException {
    onConnection(call, c -> update(c, resetSql, call));
  }

  void override(PostgresCall call) throws SQLException {
    try (Connection c = connection()) {
      update(c, overrideSql, call);
    }
  }

  /** Whether there was an override to clear. */
  boolean clearOverride(PostgresCall call) throws SQLException {
    try (Connection c = connection()) {
      return update(c, clearOverrideSql, call) > 0;
    }
  }

  /** The key's override under the call's policy name, or null when its row is not pinned. */
  Policy overrideOf(PostgresCall call) throws SQLException {
    Policy p = call.policy;
    try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(overrideReadSql.sql)) {
      bind(ps, overrideReadSql, call, policyId(p), StoredId.key(p.name(), call.key), call.alg, p.algorithm(), call.permits, null);
      try (ResultSet rs = mainResult(ps)) {
        return rs.next() ? PostgresRow.pinnedPolicy(p, rs.getInt(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)) : null;
      }
    }
  }

  /** The JDBC work of a decision on one connection. */
  private interface OnConnection<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs {@code work} for {@code call} on a connection from the gate ({@link ConnectionGate}); a
   * failure that says the store was lost closes the gate, so that the next decisions are answered at
   * once as not reached, instead of waiting in the pool, until its probe reaches the store.
   */
  private <T> T onConnection(PostgresCall call, OnConnection<T> work) throws SQLException {
    try (Connection c = prepared(gate.borrow(dataSource, call.connectionWait, call.deadline, networkTimeoutMillis))) {
      return work.run(c);
    } catch (SQLException e) {
      gate.failed(dataSource, e, networkTimeoutMillis);
      throw e;
    }
  }

  /** A connection for administrative work (sweep, overrides): straight from the data source, past the gate. */
  Connection connection() throws SQLException {
    return prepared(dataSource.getConnection());
  }

  /** {@code c} in autocommit, with a network timeout that frees a worker stuck on a hung socket. */
  private Connection prepared(Connection c) throws SQLException {
    try {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      // The caller has its deadline already; this frees the worker. The pool restores its own value
      // when the connection is returned.
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

  /** Executes and returns the result set of the main statement (after tenant mode's set_config). */
  ResultSet mainResult(PreparedStatement ps) throws SQLException {
    ps.execute();
    if (tenantMode) {
      ps.getMoreResults();
    }
    return ps.getResultSet();
  }

  /** Executes and returns the update count of the main statement (after tenant mode's set_config). */
  int updateCount(PreparedStatement ps) throws SQLException {
    ps.execute();
    if (tenantMode) {
      ps.getMoreResults();
    }
    return ps.getUpdateCount();
  }

  private int update(Connection c, PostgresSql.Bound sql, PostgresCall call) throws SQLException {
    Policy p = call.policy;
    try (PreparedStatement ps = c.prepareStatement(sql.sql)) {
      bind(ps, sql, call, policyId(p), StoredId.key(p.name(), call.key), call.alg, p.algorithm(), call.permits, null);
      return updateCount(ps);
    }
  }

  private String policyId(Policy p) {
    return p.name().equals(defaultPolicyName) ? defaultPolicyId : StoredId.policy(p.name());
  }

  /** {@code snap}, unless it is malformed: then the call fails closed. */
  private static PostgresSql.Snapshot wellFormed(PostgresSql.Snapshot snap) {
    if (snap != null && !snap.wellFormed()) {
      throw new StoreFailure(Reason.CORRUPT_STATE, null);
    }
    return snap;
  }

  /** The model's state of the row under {@code eff}: a row of another algorithm counts as absent. */
  private static long[] state(PostgresSql.Snapshot snap, Policy eff) {
    return snap != null && snap.alg() == PostgresRow.code(eff.algorithm()) ? snap.state() : new long[3];
  }

  private static void bind(PreparedStatement ps, PostgresSql.Bound sql, PostgresCall call, String pid, String kid, int alg,
                           Algorithm a, long n, Ticket ticket) throws SQLException {
    sql.bind(ps, (st, j, name) -> bindOne(st, j, name, call, pid, kid, alg, a, n, ticket));
  }

  private static void bindOne(PreparedStatement st, int j, String name, PostgresCall call, String pid, String kid, int alg,
                              Algorithm a, long n, Ticket ticket) throws SQLException {
    switch (name) {
      case "now" -> st.setLong(j, call.now);
      case "tenant" -> st.setString(j, call.tenant);
      case "pid" -> st.setString(j, pid);
      case "kid" -> st.setString(j, kid);
      case "alg" -> st.setShort(j, (short) alg);
      case "p1" -> st.setLong(j, PostgresRow.param(a, 1));
      case "p2" -> st.setLong(j, PostgresRow.param(a, 2));
      case "p3" -> st.setLong(j, PostgresRow.param(a, 3));
      case "n" -> st.setLong(j, n);
      case "stamp" -> st.setLong(j, ticket.stamp());
      case "tid" -> st.setString(j, ticket.id());
      case "tend" -> st.setLong(j, ModelSteps.ticketExpiresAt(ticket));
      default -> throw new IllegalStateException("unbound parameter " + name);
    }
  }
}

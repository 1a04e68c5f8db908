package dev.sluice.jdbc;

import static dev.sluice.jdbc.PostgresRow.ALG_BUCKET;
import static dev.sluice.jdbc.PostgresRow.ALG_FIXED;
import static dev.sluice.jdbc.PostgresRow.ALG_GCRA;
import static dev.sluice.jdbc.PostgresRow.ALG_SLIDING;
import static dev.sluice.jdbc.PostgresRow.wellFormed;

import dev.sluice.internal.Checks;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The SQL of the PostgreSQL backend: one statement per decision, generated once per limiter and
 * algorithm.
 *
 * <p>Each algorithm of {@link dev.sluice.model.ReferenceModel} is written out as nested
 * sub-SELECTs (one per intermediate of the Java step, named like the Java locals), so that a reader
 * can check the SQL against the model line by line. Java's {@code Math.floorDiv}/{@code ceilDiv}
 * become explicit {@code CASE} forms on bigint (SQL's {@code /} truncates toward zero, as Java's
 * {@code /} does, so plain divisions port unchanged).
 *
 * <h2>The acquire statement</h2>
 * <pre>
 * WITH c   AS (SELECT now [, set_config('synchronous_commit','off',true)]),
 *      cur AS (SELECT the row as of the statement's snapshot),
 *      up  AS (INSERT the fresh-key state
 *                WHERE there is no row, or the step on cur allows              -- (1) snapshot pre-check
 *              ON CONFLICT DO UPDATE SET the stepped state
 *                WHERE the locked row is well-formed AND the step on it allows -- (2) authoritative
 *              RETURNING the new state)
 * SELECT c.now, up.*, cur.* FROM c LEFT JOIN up LEFT JOIN cur
 * </pre>
 * (2) computes from the row it locked (the latest committed version), so two racing consumers of
 * the last permit resolve to exactly one winner. (1) exists because ON CONFLICT locks the existing
 * row before it evaluates its WHERE: without it a refusal would still take a row lock, which is a
 * write (an xid, a WAL record, a commit flush). With it, a refusal the snapshot can already see
 * inserts no row, locks nothing and writes nothing. Either way the caller computes a refusal's
 * remaining and retry-after from {@code cur} with the reference model, in the same round trip; when
 * (1) allowed but (2) refused (a concurrent writer committed in between), the snapshot is stale
 * and the caller asks once more.
 *
 * <p>Placeholders {@code {name}} become JDBC {@code ?} parameters bound by name ({@link Bound}). Each
 * statement that returns rows is followed here by the record that reads them, by column label.
 *
 * <p>This file is over 500 lines because it holds every statement's SQL text and nothing else: the
 * model's translation stays in one place beside the constants substituted into it.
 */
final class PostgresSql {
  private static final String SERVER_NOW = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint";
  private static final String ROW_COLS = "alg, pinned, p1, p2, p3, s0, s1, s2";

  private final String table;
  private final boolean tickerTime;
  private final boolean relaxed;
  private final boolean tenantMode;

  PostgresSql(String table, boolean tickerTime, boolean relaxed, boolean tenantMode) {
    this.table = table;
    this.tickerTime = tickerTime;
    this.relaxed = relaxed;
    this.tenantMode = tenantMode;
  }

  // ---------------------------------------------------------------------------------------------
  // Statements.
  // ---------------------------------------------------------------------------------------------

  Bound acquire(int alg) {
    String insertL1 = "SELECT c.now AS now, {n} AS n, {p1} AS p1, {p2} AS p2, {p3} AS p3,"
        + " 0::bigint AS s0, 0::bigint AS s1, 0::bigint AS s2";
    String updateL1 = "SELECT EXCLUDED.updated_at AS now, {n} AS n," + configuration("r", i -> "EXCLUDED.p" + i) + ","
        + stateOf("r", "EXCLUDED.alg");
    String snapshotL1 = "SELECT c.now AS now, {n} AS n," + configuration("cur", i -> "{p" + i + "}") + "," + stateOf("cur", "{alg}");
    String update = step(alg, updateL1);
    // The snapshot pre-check: when the statement's snapshot already refuses, the INSERT gets no row
    // at all, so ON CONFLICT never locks the existing row (a lock is a write: an xid, WAL, a dirty
    // page). Only a snapshot that allows goes on to lock the row and re-decide on its latest version.
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now" + durability() + "),\n"
        + "cur AS (SELECT " + ROW_COLS + " FROM " + table + " WHERE " + pk("") + "),\n"
        + "up AS (INSERT INTO " + table + " AS r (tenant, policy_id, key_id, alg, p1, p2, p3, pinned, s0, s1, s2, expires_at, version, updated_at)\n"
        + "  SELECT " + tenant() + ", {pid}, {kid}, {alg}, {p1}, {p2}, {p3}, false, x.s0, x.s1, x.s2, x.exp, 1, c.now\n"
        + "  FROM c LEFT JOIN cur ON true, LATERAL (" + step(alg, insertL1) + ") x\n"
        + "  WHERE cur.alg IS NULL OR ((NOT cur.pinned OR cur.alg = {alg}) AND " + wellFormed("cur") + "\n"
        + "    AND (SELECT y.ok FROM (" + step(alg, snapshotL1) + ") y))\n"
        + "  ON CONFLICT (tenant, policy_id, key_id) DO UPDATE\n"
        + "  SET (s0, s1, s2, expires_at, alg, p1, p2, p3, version, updated_at) =\n"
        + "      (SELECT y.s0, y.s1, y.s2, y.exp, EXCLUDED.alg, y.p1, y.p2, y.p3, r.version + 1, EXCLUDED.updated_at FROM (" + update + ") y)\n"
        + "  WHERE (NOT r.pinned OR r.alg = EXCLUDED.alg) AND " + wellFormed("r") + "\n"
        + "    AND (SELECT y.ok FROM (" + update + ") y)\n"
        + "  RETURNING r.s0, r.s1, r.s2, r.p1, r.p2, r.p3, r.pinned)\n"
        + "SELECT c.now AS now, up.s0 AS up_s0, up.s1 AS up_s1, up.s2 AS up_s2, up.p1 AS up_p1, up.p2 AS up_p2,"
        + " up.p3 AS up_p3, up.pinned AS up_pinned, " + Snapshot.COLUMNS + " FROM c LEFT JOIN up ON true LEFT JOIN cur ON true";
    return new Bound(sql);
  }

  /**
   * The acquire statement's one row: the time, the state it wrote ({@code written}, null when it
   * wrote nothing: a refusal, a malformed row, or a row pinned to another algorithm) and the row as
   * the statement's snapshot saw it.
   */
  record AcquireRow(long now, Written written, Snapshot cur) {
    static AcquireRow read(ResultSet rs) throws SQLException {
      rs.next();
      long now = rs.getLong("now");
      boolean pinned = rs.getBoolean("up_pinned");
      Written w = rs.wasNull() ? null : new Written(rs.getLong("up_s0"), rs.getLong("up_s1"), rs.getLong("up_s2"),
          rs.getLong("up_p1"), rs.getLong("up_p2"), rs.getLong("up_p3"), pinned);
      return new AcquireRow(now, w, Snapshot.read(rs));
    }
  }

  /** The state and configuration an allowed acquire wrote. */
  record Written(long s0, long s1, long s2, long p1, long p2, long p3, boolean pinned) {}

  /**
   * A coalesced batch of acquires ({@code {ns}}, a bigint array, in arrival order) decided in one
   * statement, as the reference model decides that sequence at one instant: the same step as
   * {@link #acquire}, folded over the requests by a recursive CTE, each request on the state the one
   * before it left (a refusal leaves it unchanged), and the final state written once.
   *
   * <pre>
   * WITH RECURSIVE c, q (the requests, numbered), cur (the row as of the snapshot),
   *      lk   AS (SELECT the row FOR UPDATE WHERE the snapshot admits the smallest request), -- (1)
   *      base AS (the locked row, else the snapshot's, else no row),
   *      fold AS (request 0: base; request i: the step on request i-1's state),
   *      upd  AS (UPDATE the locked row to the last state, when a request was admitted),
   *      ins  AS (INSERT it when there was no row; ON CONFLICT DO NOTHING)
   * SELECT one row per request: its verdict and the state it was decided on
   * </pre>
   * (1) is the single statement's snapshot pre-check: a refusal never changes a state and a larger
   * request never fits where a smaller one does not, so when the snapshot refuses the smallest
   * request it refuses all of them, and nothing is locked or written. Otherwise the row is locked
   * and the fold runs on its latest committed version, so the verdicts are exact even when another
   * writer committed after the snapshot. The two cases that write nothing although a request fitted
   * (a row inserted, or deleted by the sweep, by another writer since the snapshot) come back with
   * {@code wrote = 0} and the caller asks again.
   */
  Bound batch(int alg) {
    String snapshotL1 = "SELECT c.now AS now, (SELECT min(q.n) FROM q) AS n," + configuration("cur", i -> "{p" + i + "}") + ","
        + stateOf("cur", "{alg}");
    String foldL1 = "SELECT c.now AS now, q.n AS n, base.p1 AS p1, base.p2 AS p2, base.p3 AS p3, w.s0 AS s0, w.s1 AS s1,"
        + " w.s2 AS s2 FROM c";
    String any = "(SELECT bool_or(fold.ok) FROM fold)";
    String sql = prefix()
        + "WITH RECURSIVE c AS (SELECT " + now() + " AS now" + durability() + "),\n"
        + "q AS (SELECT u.n, u.i FROM unnest({ns}::bigint[]) WITH ORDINALITY AS u(n, i)),\n"
        + "cur AS (SELECT " + ROW_COLS + " FROM " + table + " WHERE " + pk("") + "),\n"
        + "lk AS MATERIALIZED (SELECT " + ROW_COLS + " FROM " + table + " WHERE " + pk("") + "\n"
        + "  AND (SELECT CASE WHEN (NOT cur.pinned OR cur.alg = {alg}) AND " + wellFormed("cur")
        + " THEN (SELECT y.ok FROM (" + step(alg, snapshotL1) + ") y) ELSE false END FROM c, cur)\n"
        + "  FOR UPDATE),\n"
        + "x AS (SELECT 1 AS kind, lk.* FROM lk UNION ALL SELECT 2, cur.* FROM cur WHERE NOT EXISTS (SELECT 1 FROM lk)),\n"
        + "base AS (SELECT x.kind, x.alg, x.pinned, " + wellFormed("x") + " AS wf,"
        + " x.alg IS NULL OR ((NOT x.pinned OR x.alg = {alg}) AND " + wellFormed("x") + ") AS good,"
        + configuration("x", i -> "{p" + i + "}") + "," + stateOf("x", "{alg}") + " FROM c LEFT JOIN x ON true),\n"
        + "fold (i, ok, s0, s1, s2, exp, b0, b1, b2) AS (\n"
        + "  SELECT 0::bigint, false, base.s0, base.s1, base.s2, 0::bigint, 0::bigint, 0::bigint, 0::bigint FROM base WHERE base.good\n"
        + "  UNION ALL\n"
        + "  SELECT q.i, y.ok, CASE WHEN y.ok THEN y.s0 ELSE w.s0 END, CASE WHEN y.ok THEN y.s1 ELSE w.s1 END,"
        + " CASE WHEN y.ok THEN y.s2 ELSE w.s2 END, CASE WHEN y.ok THEN y.exp ELSE w.exp END, w.s0, w.s1, w.s2\n"
        + "  FROM fold w JOIN q ON q.i = w.i + 1 CROSS JOIN base, LATERAL (" + step(alg, foldL1) + ") y),\n"
        + "fin AS (SELECT fold.s0, fold.s1, fold.s2, fold.exp FROM fold ORDER BY fold.i DESC LIMIT 1),\n"
        + "upd AS (UPDATE " + table + " AS r SET (s0, s1, s2, expires_at, alg, p1, p2, p3, version, updated_at) =\n"
        + "    (SELECT fin.s0, fin.s1, fin.s2, fin.exp, {alg}, base.p1, base.p2, base.p3, r.version + 1, c.now FROM fin, base, c)\n"
        + "  FROM base WHERE " + pk("r.") + " AND base.kind = 1 AND " + any + " RETURNING 1),\n"
        + "ins AS (INSERT INTO " + table + " AS r (tenant, policy_id, key_id, alg, p1, p2, p3, pinned, s0, s1, s2, expires_at, version, updated_at)\n"
        + "  SELECT " + tenant() + ", {pid}, {kid}, {alg}, base.p1, base.p2, base.p3, false, fin.s0, fin.s1, fin.s2, fin.exp, 1, c.now"
        + " FROM base, fin, c WHERE base.kind IS NULL AND " + any + "\n"
        + "  ON CONFLICT (tenant, policy_id, key_id) DO NOTHING RETURNING 1)\n"
        + "SELECT c.now AS now, base.alg AS b_alg, base.pinned AS b_pinned, base.wf AS b_ok, base.p1 AS b_p1, base.p2 AS b_p2,"
        + " base.p3 AS b_p3, (SELECT count(*) FROM upd) + (SELECT count(*) FROM ins) AS wrote,"
        + " w.i AS i, w.ok AS ok, w.b0 AS s0, w.b1 AS s1, w.b2 AS s2\n"
        + "FROM c CROSS JOIN base LEFT JOIN fold w ON w.i > 0 ORDER BY w.i";
    return new Bound(sql);
  }

  /**
   * The batch statement's rows: the time, the row the fold started from ({@code alg} 0 when the key
   * had none; {@code wellFormed}; its pinned configuration), whether it wrote, and for each request
   * (none when the row is malformed or pinned to another algorithm) its verdict and the state it was
   * decided on.
   */
  record BatchRows(long now, int alg, boolean pinned, boolean wellFormed, long p1, long p2, long p3, boolean wrote,
                   boolean[] ok, long[][] before) {
    static BatchRows read(ResultSet rs, int n) throws SQLException {
      boolean[] ok = new boolean[n];
      long[][] before = new long[n][];
      rs.next();
      long now = rs.getLong("now");
      int alg = rs.getShort("b_alg");
      boolean pinned = rs.getBoolean("b_pinned");
      boolean wf = alg == 0 || rs.getBoolean("b_ok");
      long p1 = rs.getLong("b_p1"), p2 = rs.getLong("b_p2"), p3 = rs.getLong("b_p3");
      boolean wrote = rs.getLong("wrote") > 0;
      int rows = 0;
      do {
        long i = rs.getLong("i");
        if (rs.wasNull()) {
          break;
        }
        ok[(int) i - 1] = rs.getBoolean("ok");
        before[(int) i - 1] = new long[] {rs.getLong("s0"), rs.getLong("s1"), rs.getLong("s2")};
        rows++;
      } while (rs.next());
      return new BatchRows(now, alg, pinned, wf, p1, p2, p3, wrote, ok, rows == n ? before : null);
    }
  }

  /** The row as of the statement's snapshot, and the time: no write, no lock. */
  Bound peek() {
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now)\n"
        + "SELECT c.now AS now, " + Snapshot.COLUMNS + " FROM c"
        + " LEFT JOIN (SELECT " + ROW_COLS + " FROM " + table + " WHERE " + pk("") + ") cur ON true";
    return new Bound(sql);
  }

  /** The peek statement's one row: the time and the row. */
  record PeekRow(long now, Snapshot cur) {
    static PeekRow read(ResultSet rs) throws SQLException {
      rs.next();
      return new PeekRow(rs.getLong("now"), Snapshot.read(rs));
    }
  }

  /**
   * A row ({@code cur}) as of a statement's snapshot, as the acquire and peek statements return it,
   * with the verdict of {@link PostgresRow#wellFormed(String)} on it.
   */
  record Snapshot(int alg, boolean pinned, long p1, long p2, long p3, long s0, long s1, long s2, boolean wellFormed) {
    static final String COLUMNS = "cur.alg AS cur_alg, cur.pinned AS cur_pinned, cur.p1 AS cur_p1, cur.p2 AS cur_p2,"
        + " cur.p3 AS cur_p3, cur.s0 AS cur_s0, cur.s1 AS cur_s1, cur.s2 AS cur_s2, " + PostgresRow.wellFormed("cur") + " AS cur_ok";

    /** The row, or null when the key has none. */
    static Snapshot read(ResultSet rs) throws SQLException {
      int alg = rs.getShort("cur_alg");
      if (rs.wasNull()) {
        return null;
      }
      return new Snapshot(alg, rs.getBoolean("cur_pinned"), rs.getLong("cur_p1"), rs.getLong("cur_p2"), rs.getLong("cur_p3"),
          rs.getLong("cur_s0"), rs.getLong("cur_s1"), rs.getLong("cur_s2"), rs.getBoolean("cur_ok"));
    }

    long[] state() {
      return new long[] {s0, s1, s2};
    }
  }

  /** Gives permits back as {@code ReferenceModel.refund}; returns a row only when it applied. */
  Bound refund(int alg) {
    String l1 = "SELECT c.now AS now, {n} AS n, {stamp} AS stamp," + configuration("r", i -> "{p" + i + "}")
        + ", r.s0 AS s0, r.s1 AS s1, r.s2 AS s2";
    String st = refundStep(alg, l1);
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now" + durability() + "),\n"
        + spend()
        + "UPDATE " + table + " AS r SET (s0, s1, s2, expires_at, version, updated_at) =\n"
        + "  (SELECT y.s0, y.s1, y.s2, y.exp, r.version + 1, c.now FROM (" + st + ") y)\n"
        + "FROM c WHERE " + pk("r.") + " AND r.alg = {alg} AND " + wellFormed("r") + "\n"
        + "  AND EXISTS (SELECT 1 FROM spent) AND (SELECT y.ok FROM (" + st + ") y)\n"
        + "RETURNING r.version";
    return new Bound(sql);
  }

  /**
   * Charges a settlement's overrun as {@code ReferenceModel.settle} with a positive difference
   * {@code {n}}: an upsert, since an overrun on a key without a row (or one another algorithm wrote)
   * opens a fresh state, as an acquire would. Returns a row only when it applied.
   */
  Bound overrun(int alg) {
    String insertL1 = "SELECT c.now AS now, {n} AS n, {stamp} AS stamp, {p1} AS p1, {p2} AS p2, {p3} AS p3,"
        + " 0::bigint AS s0, 0::bigint AS s1, 0::bigint AS s2";
    String updateL1 = "SELECT EXCLUDED.updated_at AS now, {n} AS n, {stamp} AS stamp," + configuration("r", i -> "EXCLUDED.p" + i) + ","
        + stateOf("r", "EXCLUDED.alg");
    String update = overrunStep(alg, updateL1);
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now" + durability() + "),\n"
        + spend()
        + "INSERT INTO " + table + " AS r (tenant, policy_id, key_id, alg, p1, p2, p3, pinned, s0, s1, s2, expires_at, version, updated_at)\n"
        + "  SELECT " + tenant() + ", {pid}, {kid}, {alg}, {p1}, {p2}, {p3}, false, x.s0, x.s1, x.s2, x.exp, 1, c.now\n"
        + "  FROM c, LATERAL (" + overrunStep(alg, insertL1) + ") x WHERE EXISTS (SELECT 1 FROM spent)\n"
        + "  ON CONFLICT (tenant, policy_id, key_id) DO UPDATE\n"
        + "  SET (s0, s1, s2, expires_at, alg, p1, p2, p3, version, updated_at) =\n"
        + "      (SELECT y.s0, y.s1, y.s2, y.exp, EXCLUDED.alg, y.p1, y.p2, y.p3, r.version + 1, EXCLUDED.updated_at FROM (" + update + ") y)\n"
        + "  WHERE (NOT r.pinned OR r.alg = EXCLUDED.alg) AND " + wellFormed("r") + "\n"
        + "    AND (SELECT y.ok FROM (" + update + ") y)\n"
        + "RETURNING r.version";
    return new Bound(sql);
  }

  /**
   * The refund's and overrun's first step (issue 26): records the ticket {@code {tid}} as spent for the
   * budget, in the same statement (so the same transaction) that applies it, as a row of this table
   * beside the budget's: key {@code <key id>:t:<ticket id>}, algorithm {@link PostgresRow#ALG_SPENT},
   * expiring when the ticket's life {@code {tend}} ends (the sweep deletes it then; tenant mode's
   * row-level security covers it as any row). Yields a row only for a live ticket not recorded before:
   * the main statement applies only then. A concurrent statement for the same ticket waits on the
   * primary key and then finds it recorded.
   */
  private String spend() {
    return "spent AS (INSERT INTO " + table + " (tenant, policy_id, key_id, alg, p1, p2, p3, pinned, s0, s1, s2, expires_at, version, updated_at)\n"
        + "  SELECT " + tenant() + ", {pid}, {kid} || ':t:' || {tid}, " + PostgresRow.ALG_SPENT + ", 0, 0, 0, false, 0, 0, 0, {tend}, 1, c.now\n"
        + "  FROM c WHERE c.now < {tend}\n"
        + "  ON CONFLICT (tenant, policy_id, key_id) DO NOTHING RETURNING 1)\n";
  }

  /** Whether the refund or overrun statement applied: it returns a row only then. */
  static boolean refundApplied(ResultSet rs) throws SQLException {
    return rs.next();
  }

  /** Forgets a key: deletes its row, or for an overridden (pinned) row clears the state but keeps the override. */
  Bound reset() {
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now" + durability() + "),\n"
        + "d AS (DELETE FROM " + table + " WHERE " + pk("") + " AND NOT pinned RETURNING 1)\n"
        + "UPDATE " + table + " AS r SET s0 = 0, s1 = 0, s2 = 0, expires_at = 0, version = r.version + 1, updated_at = c.now\n"
        + "FROM c WHERE " + pk("r.") + " AND r.pinned";
    return new Bound(sql);
  }

  /**
   * Pins a key's configuration. The state is kept when the algorithm is unchanged, and decided with
   * the new numbers from the next hit on, as a per-call policy of the same name is (the reference
   * model's rule, which the kit's OverrideCases hold every backend to; a token bucket's tokens are
   * capped at the new capacity); otherwise the key starts fresh.
   */
  Bound override() {
    String keep = "(r.alg = EXCLUDED.alg AND " + wellFormed("r") + ")";
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now" + durability() + ")\n"
        + "INSERT INTO " + table + " AS r (tenant, policy_id, key_id, alg, p1, p2, p3, pinned, s0, s1, s2, expires_at, version, updated_at)\n"
        + "SELECT " + tenant() + ", {pid}, {kid}, {alg}, {p1}, {p2}, {p3}, true, 0, 0, 0, 0, 1, c.now FROM c\n"
        + "ON CONFLICT (tenant, policy_id, key_id) DO UPDATE SET alg = EXCLUDED.alg, p1 = EXCLUDED.p1, p2 = EXCLUDED.p2,"
        + " p3 = EXCLUDED.p3, pinned = true,\n"
        + "  s0 = CASE WHEN " + keep + " THEN r.s0 ELSE 0 END,\n"
        + "  s1 = CASE WHEN " + keep + " THEN CASE WHEN r.alg = " + ALG_BUCKET
        + " THEN LEAST(r.s1, EXCLUDED.p1 * EXCLUDED.p3) ELSE r.s1 END ELSE 0 END,\n"
        + "  s2 = CASE WHEN " + keep + " THEN r.s2 ELSE 0 END,\n"
        + "  version = r.version + 1, updated_at = EXCLUDED.updated_at";
    return new Bound(sql);
  }

  /** A key's override: its row's algorithm and p1..p3 when the row is pinned, no row otherwise. */
  Bound overrideRead() {
    String sql = prefix() + "SELECT alg, p1, p2, p3 FROM " + table + " WHERE " + pk("") + " AND pinned";
    return new Bound(sql);
  }

  /** Drops a key's override: the caller's policy decides it again. */
  Bound clearOverride() {
    String sql = prefix()
        + "UPDATE " + table + " SET pinned = false, version = version + 1 WHERE " + pk("") + " AND pinned";
    return new Bound(sql);
  }

  /**
   * One sweep batch read: expired, unpinned rows, and pinned rows that are not well-formed (kept, as
   * every pinned row is, but counted as malformed), after the cursor, in primary-key order (a range
   * scan of the one index), with whether each is well-formed.
   */
  Bound sweepRead() {
    String scope = tenantMode ? "tenant = " + tenant() + " AND " : "";
    String sql = prefix()
        + "WITH c AS (SELECT " + now() + " AS now)\n"
        + "SELECT r.tenant, r.policy_id, r.key_id, r.version, (" + wellFormed("r") + " OR " + PostgresRow.spentRow("r")
        + ") AS ok FROM " + table + " AS r, c\n"
        + "WHERE " + scope + "(r.tenant, r.policy_id, r.key_id) > ({ctenant}, {cpid}, {ckid})"
        + " AND ((r.expires_at < c.now AND NOT r.pinned) OR (r.pinned AND NOT " + wellFormed("r") + "))\n"
        + "ORDER BY r.tenant, r.policy_id, r.key_id LIMIT {limit}";
    return new Bound(sql);
  }

  /** One row of a sweep batch: its primary key, its version, whether it is well-formed. */
  record SweepRow(String tenant, String policyId, String keyId, long version, boolean wellFormed) {
    /** The next row of the batch, or null after the last. */
    static SweepRow next(ResultSet rs) throws SQLException {
      return rs.next() ? new SweepRow(rs.getString("tenant"), rs.getString("policy_id"), rs.getString("key_id"),
          rs.getLong("version"), rs.getBoolean("ok")) : null;
    }

    /** The row's primary key as an operator finds it: {@code policy_id/key_id}, after {@code tenant/} in tenant mode. */
    String id() {
      return (tenant.isEmpty() ? "" : tenant + "/") + policyId + "/" + keyId;
    }
  }

  /** Deletes the rows of a batch whose version is still the one read. */
  Bound sweepDelete() {
    String sql = prefix()
        + "DELETE FROM " + table + " AS r USING unnest({tenants}::text[], {pids}::text[], {kids}::text[], {versions}::bigint[])"
        + " AS b(tenant, policy_id, key_id, version)\n"
        + "WHERE r.tenant = b.tenant AND r.policy_id = b.policy_id AND r.key_id = b.key_id AND r.version = b.version"
        + " AND NOT r.pinned";
    return new Bound(sql);
  }

  // ---------------------------------------------------------------------------------------------
  // Pieces.
  // ---------------------------------------------------------------------------------------------

  /** Tenant mode binds the tenant to the statement's transaction first, in the same round trip. */
  private String prefix() {
    return tenantMode ? "SELECT set_config('sluice.tenant', {tenant}, true);\n" : "";
  }

  private String tenant() {
    return tenantMode ? "{tenant}" : "''";
  }

  private String pk(String alias) {
    return alias + "tenant = " + tenant() + " AND " + alias + "policy_id = {pid} AND " + alias + "key_id = {kid}";
  }

  /**
   * The configuration the model runs with on row {@code r}: its p1..p3 when it is pinned, else the
   * caller's, {@code given.apply(i)} (the parameters {@code {p1}}.., or {@code EXCLUDED.p1}.. in ON CONFLICT).
   */
  private static String configuration(String r, IntFunction<String> given) {
    StringBuilder b = new StringBuilder();
    for (int i = 1; i <= 3; i++) {
      b.append(i > 1 ? "," : "").append(" CASE WHEN ").append(r).append(".pinned THEN ").append(r).append(".p").append(i)
          .append(" ELSE ").append(given.apply(i)).append(" END AS p").append(i);
    }
    return b.toString();
  }

  /** Row {@code r}'s state s0..s2 when it is of algorithm {@code alg}; zeros (no state) otherwise. */
  private static String stateOf(String r, String alg) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 3; i++) {
      b.append(i > 0 ? "," : "").append(" CASE WHEN ").append(r).append(".alg = ").append(alg).append(" THEN ").append(r)
          .append(".s").append(i).append(" ELSE 0 END AS s").append(i);
    }
    return b.toString();
  }

  private String now() {
    return tickerTime ? "{now}::bigint" : SERVER_NOW;
  }

  private String durability() {
    return relaxed ? ", set_config('synchronous_commit', 'off', true) AS relaxed" : "";
  }

  /** {@code Math.floorDiv(a, b)} for {@code b > 0}. */
  static String floorDiv(String a, String b) {
    return "(CASE WHEN (" + a + ") >= 0 THEN (" + a + ") / (" + b + ") ELSE -((-(" + a + ") + (" + b + ") - 1) / (" + b + ")) END)";
  }

  /** {@code ceilDiv(a, b) = -floorDiv(-a, b)} for {@code b > 0}. */
  static String ceilDiv(String a, String b) {
    return "(CASE WHEN (" + a + ") <= 0 THEN -((-(" + a + ")) / (" + b + ")) ELSE ((" + a + ") + (" + b + ") - 1) / (" + b + ") END)";
  }

  /**
   * The acquire step over a layer {@code l1} that yields now, n, p1..p3, s0..s2 (the state as the
   * model would see it). Yields s0, s1, s2, exp (expiresAt of the new state), ok (the step allows),
   * and p1..p3 passed through.
   */
  static String step(int alg, String l1) {
    switch (alg) {
      case ALG_FIXED:
        // live = start != 0 && now - start < W; start = live ? s0 : now; count = live ? s1 : 0
        return "SELECT f.start AS s0, f.cnt + f.n AS s1, 0::bigint AS s2, f.start + f.p2 AS exp,"
            + " f.cnt + f.n <= f.p1 AND " + notAhead("f", alg) + " AS ok, f.p1, f.p2, f.p3 FROM"
            + " (SELECT e.*, CASE WHEN e.s0 <> 0 AND e.now - e.s0 < e.p2 THEN e.s0 ELSE e.now END AS start,"
            + " CASE WHEN e.s0 <> 0 AND e.now - e.s0 < e.p2 THEN e.s1 ELSE 0 END AS cnt FROM (" + l1 + ") e) f";
      case ALG_SLIDING:
        // a = now - now mod W; normalise (start, cur, prev); estimate = cur + ceil(prev (W - e) / W)
        return "SELECT g.start AS s0, g.cur + g.n AS s1, g.prev AS s2, g.start + 2 * g.p2 AS exp,"
            + " g.cur + (CASE WHEN g.prev = 0 THEN 0 ELSE " + ceilDiv("g.prev * (g.p2 - GREATEST(0, g.now - g.start))", "g.p2")
            + " END) + g.n <= g.p1 AND " + notAhead("g", alg) + " AS ok, g.p1, g.p2, g.p3 FROM" + slidingNormalized(l1) + " g";
      case ALG_BUCKET:
        // full = C P; t = max(now, last); s = refill; allow iff s >= n P
        return "SELECT g.t AS s0, g.s - g.need AS s1, 0::bigint AS s2,"
            + " g.t + " + ceilDiv("g.cap - (g.s - g.need)", "g.p2") + " AS exp, g.s >= g.need AND " + notAhead("g", alg)
            + " AS ok, g.p1, g.p2, g.p3 FROM"
            + " (SELECT f.*, CASE WHEN f.s0 = 0 THEN f.now ELSE GREATEST(f.now, f.s0) END AS t, "
            + bucketRefill("f") + " AS s, f.n * f.p3 AS need FROM"
            + " (SELECT e.*, e.p1 * e.p3 AS cap FROM (" + l1 + ") e) f) g";
      case ALG_GCRA:
        // debt = max(0, (tat - now) Q + frac); allow iff debt + n P <= B P; TAT' = now + after / Q
        return "SELECT g.now + g.after / g.p1 AS s0, g.after % g.p1 AS s1, 0::bigint AS s2,"
            + " g.now + g.after / g.p1 + (CASE WHEN g.after % g.p1 > 0 THEN 1 ELSE 0 END) AS exp,"
            + " g.after <= g.p3 * g.p2 AND " + notAhead("g", alg) + " AS ok, g.p1, g.p2, g.p3 FROM"
            + " (SELECT f.*, f.debt + f.n * f.p2 AS after FROM (SELECT e.*, " + gcraDebt("e") + " AS debt FROM (" + l1 + ") e) f) g";
      default:
        throw new IllegalArgumentException("algorithm code " + alg);
    }
  }

  /** The refund step ({@code ReferenceModel.refund}); l1 also yields {@code stamp}. ok = the refund applies. */
  static String refundStep(int alg, String l1) {
    switch (alg) {
      case ALG_FIXED:
        return "SELECT e.s0 AS s0, GREATEST(0, e.s1 - e.n) AS s1, e.s2 AS s2, e.s0 + e.p2 AS exp,"
            + " (e.s0 <> 0 AND e.now - e.s0 < e.p2 AND e.s0 = e.stamp AND e.s1 > 0 AND " + notAhead("e", alg) + ") AS ok FROM (" + l1 + ") e";
      case ALG_SLIDING:
        return "SELECT g.start AS s0, GREATEST(0, g.cur - g.n) AS s1, g.prev AS s2, g.start + 2 * g.p2 AS exp,"
            + " (g.start = g.stamp AND g.cur > 0 AND " + notAhead("g", alg) + ") AS ok FROM" + slidingNormalized(l1) + " g";
      case ALG_BUCKET:
        return bucketSettle(l1, "-");
      case ALG_GCRA:
        // a debt over cap (the clock behind TAT by more than cap / Q) is paid back without forming it:
        // TAT' = TAT + floorDiv(frac - n P, Q), or now when that is behind it
        return "SELECT h.t0 AS s0, h.t1 AS s1, 0::bigint AS s2, h.t0 + (CASE WHEN h.t1 > 0 THEN 1 ELSE 0 END) AS exp,"
            + " (h.over OR h.debt > 0) AND " + notAhead("h", alg) + " AS ok FROM"
            + " (SELECT g.*,"
            + " CASE WHEN NOT g.over THEN g.now + g.d2 / g.p1 WHEN g.whole < g.now THEN g.now ELSE g.whole END AS t0,"
            + " CASE WHEN NOT g.over THEN g.d2 % g.p1 WHEN g.whole < g.now THEN 0 ELSE g.x - " + floorDiv("g.x", "g.p1") + " * g.p1 END AS t1"
            + " FROM (SELECT f.*, GREATEST(0, f.debt - f.n * f.p2) AS d2, f.s1 - f.n * f.p2 AS x,"
            + " f.s0 + " + floorDiv("f.s1 - f.n * f.p2", "f.p1") + " AS whole FROM"
            + " (SELECT e.*, " + gcraOver("e") + " AS over, " + gcraDebt("e") + " AS debt FROM (" + l1 + ") e) f) g) h";
      default:
        throw new IllegalArgumentException("algorithm code " + alg);
    }
  }

  /**
   * The overrun step ({@code ReferenceModel.settle}, difference {@code n > 0}); l1 also yields
   * {@code stamp}. Yields s0, s1, s2, exp, ok (the overrun changes the state) and p1..p3.
   */
  static String overrunStep(int alg, String l1) {
    switch (alg) {
      case ALG_FIXED:
        // charged to the live window, else to a window opened now; never past the debt ceiling
        return "SELECT f.start AS s0, f.c1 AS s1, 0::bigint AS s2, f.start + f.p2 AS exp,"
            + " (NOT f.live OR f.c1 <> f.s1) AND " + notAhead("f", alg) + " AS ok, f.p1, f.p2, f.p3 FROM"
            + " (SELECT d.*, CASE WHEN d.live THEN d.s0 ELSE d.now END AS start,"
            + " CASE WHEN d.live THEN " + charge("d.s1", "d.n", debtCeiling("d.p1", "1")) + " ELSE LEAST(d.n, "
            + debtCeiling("d.p1", "1") + ") END AS c1 FROM"
            + " (SELECT e.*, (e.s0 <> 0 AND e.now - e.s0 < e.p2) AS live FROM (" + l1 + ") e) d) f";
      case ALG_SLIDING:
        return "SELECT h.start AS s0, h.c1 AS s1, h.prev AS s2, h.start + 2 * h.p2 AS exp, h.c1 <> h.cur AND " + notAhead("h", alg)
            + " AS ok, h.p1, h.p2, h.p3 FROM"
            + " (SELECT g.*, " + charge("g.cur", "g.n", debtCeiling("g.p1", "g.p2")) + " AS c1 FROM" + slidingNormalized(l1) + " g) h";
      case ALG_BUCKET:
        return bucketSettle(l1, "");
      case ALG_GCRA:
        return gcraOverrun(l1);
      default:
        throw new IllegalArgumentException("algorithm code " + alg);
    }
  }

  /**
   * A token bucket's refund ({@code sign} "-") or overrun ({@code sign} ""): the balance at now,
   * negative in debt (an update time ahead of now), moved by the difference and kept within one
   * capacity either side of empty; encoded at now, or in debt k us ahead with what is left then.
   */
  private static String bucketSettle(String l1, String sign) {
    String balance = "CASE WHEN d.s0 = 0 OR d.s0 - d.now <= 0 THEN " + bucketRefill("d")
        + " WHEN d.s0 - d.now >= " + ceilDiv("d.s1 + d.cap", "d.p2") + " THEN -d.cap ELSE d.s1 - (d.s0 - d.now) * d.p2 END";
    return "SELECT h.s0, h.s1, 0::bigint AS s2, h.s0 + " + ceilDiv("h.cap - h.s1", "h.p2") + " AS exp, h.ok, h.p1, h.p2, h.p3 FROM"
        + " (SELECT g.p1, g.p2, g.p3, g.cap, CASE WHEN g.b2 >= 0 THEN g.now ELSE g.now + g.k END AS s0,"
        + " CASE WHEN g.b2 >= 0 THEN g.b2 ELSE LEAST(g.cap, g.k * g.p2 + g.b2) END AS s1, g.b2 <> g.b AND "
        + notAhead("g", ALG_BUCKET) + " AS ok FROM"
        + " (SELECT f.*, CASE WHEN f.b2 >= 0 THEN 0 ELSE " + ceilDiv("-f.b2", "f.p2") + " END AS k FROM"
        + " (SELECT b.*, GREATEST(-b.cap, LEAST(b.cap, b.b - (" + sign + "b.n) * b.p3)) AS b2 FROM"
        + " (SELECT d.*, " + balance + " AS b FROM"
        + " (SELECT e.*, e.p1 * e.p3 AS cap FROM (" + l1 + ") e) d) b) f) g) h";
  }

  /**
   * GCRA's overrun: the debt charged up to its ceiling and encoded as a TAT. A TAT further ahead than
   * the ceiling's drain (a clock behind the state) is already past it: nothing is charged, and the
   * debt, which could overflow, is never formed ({@code ReferenceModel.settle}).
   */
  private static String gcraOverrun(String l1) {
    String ceiling = debtCeiling("e.p3 * e.p2", "1");
    return "SELECT g.now + g.d2 / g.p1 AS s0, g.d2 % g.p1 AS s1, 0::bigint AS s2,"
        + " g.now + g.d2 / g.p1 + (CASE WHEN g.d2 % g.p1 > 0 THEN 1 ELSE 0 END) AS exp,"
        + " NOT g.far AND g.d2 <> g.debt AND " + notAhead("g", ALG_GCRA) + " AS ok, g.p1, g.p2, g.p3 FROM"
        + " (SELECT f.*, CASE WHEN f.far THEN f.debt ELSE " + charge("f.debt", "f.n * f.p2", "f.ceiling") + " END AS d2 FROM"
        + " (SELECT e.*, " + ceiling + " AS ceiling, (e.s0 <> 0 AND e.s0 - e.now > " + ceiling + " / e.p1 + 1) AS far,"
        + " CASE WHEN e.s0 <> 0 AND e.s0 - e.now > " + ceiling + " / e.p1 + 1 THEN 0 ELSE " + gcraDebt("e") + " END AS debt"
        + " FROM (" + l1 + ") e) f) g";
  }

  /** {@code ReferenceModel.debtCeiling(limit, unit)}, with 2^52 substituted from {@code Checks.MAX_EXACT}. */
  private static String debtCeiling(String limit, String unit) {
    String most = "(" + dev.sluice.internal.Checks.MAX_EXACT + "::bigint / (" + unit + "))";
    return "(CASE WHEN (" + limit + ") <= " + most + " / 2 THEN 2 * (" + limit + ") ELSE GREATEST(" + limit + ", " + most + ") END)";
  }

  /** {@code ReferenceModel.charge}: {@code value + delta} up to {@code ceiling}; a value at or over it stays. */
  private static String charge(String value, String delta, String ceiling) {
    return "(CASE WHEN (" + value + ") >= " + ceiling + " THEN (" + value + ") ELSE LEAST(" + ceiling + ", (" + value + ") + ("
        + delta + ")) END)";
  }

  private static String slidingNormalized(String l1) {
    // no "absent" case: all zeros normalises to (a, 0, 0); a start of 0 with counts is the window
    // [0, W) of a clock under one window
    return " (SELECT f.*,"
        + " CASE WHEN f.s0 + f.p2 <= f.a THEN f.a ELSE f.s0 END AS start,"
        + " CASE WHEN f.s0 + f.p2 <= f.a THEN 0 ELSE f.s1 END AS cur,"
        + " CASE WHEN f.s0 + f.p2 < f.a THEN 0 WHEN f.s0 + f.p2 = f.a THEN f.s1 ELSE f.s2 END AS prev"
        + " FROM (SELECT e.*, e.now - e.now % e.p2 AS a FROM (" + l1 + ") e) f)";
  }

  /** Scaled tokens at now: an absent bucket is full; a clock behind the state keeps it; else refill, capped. */
  private static String bucketRefill(String f) {
    return "CASE WHEN " + f + ".s0 = 0 THEN " + f + ".cap WHEN " + f + ".now - " + f + ".s0 <= 0 THEN " + f + ".s1"
        + " WHEN " + f + ".now - " + f + ".s0 >= " + ceilDiv(f + ".cap - " + f + ".s1", f + ".p2") + " THEN " + f + ".cap"
        + " ELSE " + f + ".s1 + (" + f + ".now - " + f + ".s0) * " + f + ".p2 END";
  }

  /**
   * The GCRA debt. A TAT up to two bursts ahead is real settlement debt and is formed exactly; past
   * that ((tat - now) Q could overflow bigint) it stands at 2 B P + 1, beyond the debt ceiling: every
   * request is refused (the caller computes the refusal's numbers with the model), an overrun
   * charges nothing, and a refund pays such a debt back by {@link #gcraOver}.
   */
  private static String gcraDebt(String e) {
    // Past two bursts' drain (settlement's debt ceiling; a clock behind the state) the debt could
    // overflow: it is then only known to exceed the ceiling, and stands in as 2 B P + 1.
    return "CASE WHEN " + e + ".s0 = 0 OR " + e + ".s0 < " + e + ".now THEN 0 WHEN " + e + ".s0 - " + e + ".now > 2 * ("
        + e + ".p3 * " + e + ".p2 / " + e + ".p1) + 1 THEN 2 * " + e + ".p3 * " + e + ".p2 + 1"
        + " ELSE (" + e + ".s0 - " + e + ".now) * " + e + ".p1 + " + e + ".s1 END";
  }

  /** Whether the GCRA arrival time is more than cap / Q ahead of now (ReferenceModel's debtOverCap). */
  private static String gcraOver(String e) {
    return "(" + e + ".s0 <> 0 AND " + e + ".s0 - " + e + ".now > " + e + ".p3 * " + e + ".p2 / " + e + ".p1)";
  }

  /**
   * The state is not further ahead of now than its policy could have written it, plus the clock
   * tolerance ({@code ReferenceModel.tooFarAhead}): a step over a state further ahead writes nothing,
   * and the caller's model refuses it as corrupt.
   */
  private static String notAhead(String e, int alg) {
    return "(" + e + ".s0 - " + e + ".now <= " + Checks.CLOCK_TOLERANCE_MICROS
        + (alg == ALG_GCRA ? " + 2 * (" + e + ".p3 * " + e + ".p2 / " + e + ".p1) + 1"
            : alg == ALG_BUCKET ? " + " + e + ".p1 * " + e + ".p3 / " + e + ".p2 + 1" : "") + ")";
  }

  /** Sets the JDBC parameter {@code index} to the value named {@code name}. */
  @FunctionalInterface
  interface Values {
    void set(PreparedStatement ps, int index, String name) throws SQLException;
  }

  /** A statement with {@code {name}} placeholders turned into {@code ?}, and the name of each. */
  static final class Bound {
    final String sql;
    final String[] names;

    Bound(String template) {
      StringBuilder out = new StringBuilder(template.length());
      List<String> ns = new ArrayList<>();
      int i = 0;
      while (i < template.length()) {
        char ch = template.charAt(i);
        if (ch == '{') {
          int end = template.indexOf('}', i);
          ns.add(template.substring(i + 1, end));
          out.append('?');
          i = end + 1;
        } else {
          out.append(ch);
          i++;
        }
      }
      this.sql = out.toString();
      this.names = ns.toArray(new String[0]);
    }

    /** Binds every parameter of this statement in {@code ps} by its name. */
    void bind(PreparedStatement ps, Values values) throws SQLException {
      for (int i = 0; i < names.length; i++) {
        values.set(ps, i + 1, names[i]);
      }
    }
  }
}

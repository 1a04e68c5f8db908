package dev.sluice.jdbc;

import dev.sluice.Ticker;
import dev.sluice.store.SweepResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Deletes expired rows in batches: each batch reads expired, unpinned rows after a cursor in
 * primary-key order, then deletes the well-formed ones whose version is unchanged since the read
 * (a decision that wrote a row in between wins). Two short autocommit statements per batch.
 */
final class PostgresSweep {
  private final PostgresStatements statements;
  private final PostgresSql.Bound readSql;
  private final PostgresSql.Bound deleteSql;
  private final Ticker ticker;

  PostgresSweep(PostgresStatements statements, PostgresSql sql, Ticker ticker) {
    this.statements = statements;
    this.readSql = sql.sweepRead();
    this.deleteSql = sql.sweepDelete();
    this.ticker = ticker;
  }

  /** Sweeps the rows {@code tenant} sees, {@code batchSize} (at least 1) at a time, running {@code betweenReadAndDelete} (tests) in each batch. */
  SweepResult sweep(int batchSize, String tenant, Runnable betweenReadAndDelete) throws SQLException {
    PostgresSql.SweepRow cursor = new PostgresSql.SweepRow("", "", "", 0, true);
    long scanned = 0, deleted = 0, malformed = 0, changed = 0;
    List<String> malformedIds = new ArrayList<>();
    try (Connection c = statements.connection()) {
      while (true) {
        List<String> ts = new ArrayList<>(), ps = new ArrayList<>(), ks = new ArrayList<>();
        List<Long> vs = new ArrayList<>();
        int read = 0;
        try (PreparedStatement st = c.prepareStatement(readSql.sql)) {
          PostgresSql.SweepRow after = cursor;
          readSql.bind(st, (s, j, name) -> {
            switch (name) {
              case "now" -> s.setLong(j, ticker != null ? ticker.nowMicros() : 0);
              case "tenant" -> s.setString(j, tenant);
              case "ctenant" -> s.setString(j, after.tenant());
              case "cpid" -> s.setString(j, after.policyId());
              case "ckid" -> s.setString(j, after.keyId());
              case "limit" -> s.setInt(j, batchSize);
              default -> throw new IllegalStateException("unbound parameter " + name);
            }
          });
          try (ResultSet rs = statements.mainResult(st)) {
            for (PostgresSql.SweepRow row; (row = PostgresSql.SweepRow.next(rs)) != null; ) {
              read++;
              cursor = row;
              if (!row.wellFormed()) {
                malformed++;
                if (malformedIds.size() < SweepResult.MAX_NAMED) {
                  malformedIds.add(row.id());
                }
                continue;
              }
              ts.add(row.tenant());
              ps.add(row.policyId());
              ks.add(row.keyId());
              vs.add(row.version());
            }
          }
        }
        scanned += read;
        if (betweenReadAndDelete != null) {
          betweenReadAndDelete.run();
        }
        if (!ts.isEmpty()) {
          try (PreparedStatement st = c.prepareStatement(deleteSql.sql)) {
            deleteSql.bind(st, (s, j, name) -> {
              switch (name) {
                case "tenant" -> s.setString(j, tenant);
                case "tenants" -> s.setArray(j, c.createArrayOf("text", ts.toArray()));
                case "pids" -> s.setArray(j, c.createArrayOf("text", ps.toArray()));
                case "kids" -> s.setArray(j, c.createArrayOf("text", ks.toArray()));
                case "versions" -> s.setArray(j, c.createArrayOf("bigint", vs.toArray()));
                default -> throw new IllegalStateException("unbound parameter " + name);
              }
            });
            int n = statements.updateCount(st);
            deleted += n;
            changed += ts.size() - n;
          }
        }
        if (read < batchSize) {
          return new SweepResult(scanned, deleted, 0, changed, malformed, malformedIds);
        }
      }
    }
  }
}

package dev.sluice.jdbc;

import dev.sluice.internal.Checks;
import dev.sluice.jdbc.internal.TableNames;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The limiter's table: its DDL ({@code schema.sql}, and {@code schema-tenant.sql} for tenant mode,
 * resources of this package written for {@value JdbcRateLimiter#DEFAULT_TABLE}), applying it, reading
 * its version back.
 */
final class PostgresSchema {
  private static final String COMMENT = "sluice schema ";

  private PostgresSchema() {}

  /**
   * The DDL for {@code table}, plain or {@code schema.table} (tenant mode adds row-level security). A
   * row-level security policy belongs to its table and its name is never qualified, and
   * {@code pg_policies} names the table and its schema apart (folded to lower case, as unquoted
   * identifiers are): the tenant DDL gets the bare name for both and the schema (or
   * {@code current_schema()}) for the lookup.
   */
  static String ddl(String table, boolean tenantMode) {
    checkTable(table);
    String d = JdbcRateLimiter.DEFAULT_TABLE;
    int dot = table.indexOf('.');
    String bare = table.substring(dot + 1);
    // unquoted identifiers fold to lower case, which is how pg_policies lists them
    String schema = dot < 0 ? "current_schema()" : "'" + table.substring(0, dot).toLowerCase(java.util.Locale.ROOT) + "'";
    String lower = bare.toLowerCase(java.util.Locale.ROOT);
    String ddl = resource("schema.sql") + (tenantMode ? "\n" + resource("schema-tenant.sql")
        .replace("tablename = '" + d + "'", "schemaname = " + schema + " AND tablename = '" + lower + "'")
        .replace("'" + d + "_tenant'", "'" + lower + "_tenant'")
        .replace("POLICY " + d + "_tenant", "POLICY " + bare + "_tenant") : "");
    return ddl.replace(d, table);
  }

  /** Runs the DDL in one transaction, serialized across processes by a transaction-scoped advisory lock. */
  static void apply(DataSource dataSource, String table, boolean tenantMode) throws SQLException {
    String ddl = ddl(table, tenantMode);
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

  /** The version in the table's comment; 0 when the table does not exist or carries no Sluice comment. */
  static int version(DataSource dataSource, String table) throws SQLException {
    try (Connection c = dataSource.getConnection();
         PreparedStatement ps = c.prepareStatement("SELECT obj_description(to_regclass(?), 'pg_class') AS comment")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        String comment = rs.next() ? rs.getString("comment") : null;
        if (comment == null || !comment.startsWith(COMMENT)) {
          return 0;
        }
        try {
          return Integer.parseInt(comment.substring(COMMENT.length()).trim());
        } catch (NumberFormatException e) {
          return 0;
        }
      }
    }
  }

  static void checkTable(String table) {
    if (!TableNames.isPlain(table)) {
      throw new IllegalArgumentException("table " + (table == null ? "null" : Checks.quote(table))
          + " is not a plain SQL identifier; use letters, digits and '_' (optionally schema.table), at most 63 each");
    }
  }

  private static String resource(String name) {
    try (InputStream in = PostgresSchema.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource dev/sluice/jdbc/" + name + " is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read resource " + name, e);
    }
  }
}

package dev.sluice.jdbc.internal;

import java.util.regex.Pattern;

/**
 * The one rule for a table name that this module splices into SQL: a plain identifier of letters,
 * digits and '_' (not starting with a digit), optionally schema-qualified, at most 63 characters
 * each (PostgreSQL's identifier limit). Nothing that needs quoting, so nothing that can inject.
 *
 * <p>Not API: this package is not exported.
 */
public final class TableNames {
  private static final Pattern PLAIN = Pattern.compile("([A-Za-z_][A-Za-z0-9_]{0,62}\\.)?[A-Za-z_][A-Za-z0-9_]{0,62}");

  private TableNames() {}

  /** Whether {@code table} is non-null and follows the rule. */
  public static boolean isPlain(String table) {
    return table != null && PLAIN.matcher(table).matches();
  }
}

package dev.sluice.spring;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.jdbc.JdbcRateLimiter;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/** {@code sluice.store=jdbc}: a {@link JdbcRateLimiter} (PostgreSQL) per policy on the application's DataSource. */
final class JdbcStoreLimiters implements StoreLimiters {
  private final DataSource dataSource;
  private final SluiceProperties props;
  private final AtomicBoolean schemaApplied = new AtomicBoolean();

  JdbcStoreLimiters(DataSource dataSource, SluiceProperties props) {
    this.dataSource = dataSource;
    this.props = props;
  }

  @Override public String name() {
    return "jdbc";
  }

  @Override public RateLimiter build(Policy policy, RateLimitListener listener) {
    JdbcRateLimiter l = StoreLimiters.configure(JdbcRateLimiter.builder(policy, dataSource), policy, listener, props)
        .table(props.getJdbc().getTable()).build();
    if (props.getJdbc().isApplySchema() && schemaApplied.compareAndSet(false, true)) {
      try {
        l.applySchema();
      } catch (SQLException e) {
        throw new IllegalStateException("sluice.jdbc.apply-schema: creating table '" + props.getJdbc().getTable()
            + "' failed: " + e.getMessage(), e);
      }
    }
    return l;
  }
}

package dev.sluice.jdbc;

import dev.sluice.Algorithm;
import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.tck.RateLimiterContract;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole conformance kit in tenant mode: every statement sent after its
 * {@code set_config('sluice.tenant', ...)} in one round trip, as an ordinary role bound by row-level
 * security (no superuser, no BYPASSRLS), so the kit's decisions are made through the policy. The
 * outage cases run on a private server frozen with SIGSTOP, in tenant mode too. Coalescing is on
 * (the default {@code maxBatch}), batches scoped by the tenant, so async calls for one key are
 * decided in issue order and the kit's async-burst case runs here too.
 */
class PostgresTenantConformanceTest extends RateLimiterContract {
  static final String TENANT = "kit-tenant";
  @RegisterExtension static final PostgresRlsTable db = new PostgresRlsTable(16);

  @Override protected RateLimiter newLimiter(Policy policy, Ticker ticker) {
    // A generous deadline, as in PostgresConformanceTest: the kit checks exact decisions.
    return JdbcRateLimiter.builder(policy, db.asRole()).table(db.table()).tenant(() -> TENANT).ticker(ticker)
        .timeout(Duration.ofSeconds(20)).build();
  }

  @Override protected Optional<RateLimiter> newLimiterWithIssuer(Policy policy, Ticker ticker, Ticket.Issuer issuer) {
    return Optional.of(JdbcRateLimiter.builder(policy, db.asRole()).table(db.table()).tenant(() -> TENANT).ticker(ticker)
        .timeout(Duration.ofSeconds(20)).issuer(issuer).build());
  }

  @Override protected boolean supports(Algorithm algorithm) {
    return !(algorithm instanceof Algorithm.SlidingLog);
  }

  /** A private PostgreSQL frozen (SIGSTOP) and thawed, the limiter in tenant mode: never the shared server. */
  @Override protected Optional<Outage> outage(Policy policy, Ticker ticker, FailureMode mode) throws Exception {
    return Optional.of(PostgresOutage.start(ds -> {
      JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, ds).tenant(() -> TENANT).ticker(ticker)
          .timeout(Duration.ofMillis(500)).failureMode(mode).build();
      limiter.applySchema();
      return limiter;
    }));
  }
}

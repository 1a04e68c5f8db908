package dev.sluice.benchmarks;

/** The Redis and PostgreSQL suites of {@link BenchmarkReport}. */
final class RemoteSuites {
  private RemoteSuites() {}

  static void redis(BenchmarkReport report) {
    report.line("## Redis");
    report.line("");
    report.line("Not run: the Redis backend (`dev.sluice.redis.RedisRateLimiter`) has not landed on main yet.");
    report.line("");
  }

  static void postgres(BenchmarkReport report) {
    report.line("## PostgreSQL");
    report.line("");
    report.line("Not run: the PostgreSQL backend (`dev.sluice.jdbc.JdbcRateLimiter`) has not landed on main yet.");
    report.line("");
  }
}

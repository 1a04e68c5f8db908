package dev.sluice.benchmarks;

/**
 * Round trips per decision on PostgreSQL, counted by the client (statement executions plus commits and
 * rollbacks, through a {@link CountingDataSource} around each library's own pool). For each library,
 * thread count and key count it makes {@code decisions} allowed checks and prints
 * {@code STMTS <library> <threads> <keys> <decisions> <executions+commits>}. Every key is checked once
 * before counting, so the counts are of rows that exist (a first sighting costs Bucket4j more statements).
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.PostgresStatementCount 400}
 */
public final class PostgresStatementCount {
  private PostgresStatementCount() {}

  public static void main(String[] args) throws Exception {
    int decisions = args.length > 0 ? Integer.parseInt(args[0]) : 400;
    for (int keys : new int[] {1, 10_000}) {
      try (PostgresFixture fx = new PostgresFixture(keys)) {
        DecisionCount.touchAll(keys, i -> fx.sluice.tryAcquire(fx.keys[i]).allowed() & fx.sluiceRelaxed.tryAcquire(fx.keys[i]).allowed()
            & fx.selectForUpdate[i].tryConsume(1) & fx.advisoryLock[i].tryConsume(1));
        for (int threads : new int[] {1, 2, 16}) {
          print("sluiceDurable", threads, keys, decisions, DecisionCount.count(fx.sluiceCount::roundTrips, threads, decisions,
              i -> fx.sluice.tryAcquire(fx.keys[DecisionCount.pick(keys)]).allowed()));
          print("sluiceRelaxed", threads, keys, decisions, DecisionCount.count(fx.sluiceRelaxedCount::roundTrips, threads, decisions,
              i -> fx.sluiceRelaxed.tryAcquire(fx.keys[DecisionCount.pick(keys)]).allowed()));
          print("bucket4jSelectForUpdate", threads, keys, decisions, DecisionCount.count(fx.sfuCount::roundTrips, threads, decisions,
              i -> fx.selectForUpdate[DecisionCount.pick(keys)].tryConsume(1)));
          print("bucket4jAdvisoryLock", threads, keys, decisions, DecisionCount.count(fx.advisoryCount::roundTrips, threads, decisions,
              i -> fx.advisoryLock[DecisionCount.pick(keys)].tryConsume(1)));
        }
      }
    }
  }

  private static void print(String lib, int threads, int keys, int decisions, long n) {
    System.out.printf("STMTS %s %d %d %d %d%n", lib, threads, keys, decisions, n);
  }
}

package dev.sluice.benchmarks;

/**
 * Redis commands sent per decision, counted by the client (a Lettuce {@code CommandListener} on each
 * library's own client, so other users of the shared server do not disturb the count). For each
 * library, thread count and key count it makes {@code decisions} allowed checks and prints
 * {@code CMDS <library> <threads> <keys> <decisions> <commands>}. Every key is checked once before counting,
 * so the counts are of keys the store already holds (a first sighting can cost Bucket4j more).
 *
 * <p>Run: {@code java -cp sluice-benchmarks/target/benchmarks.jar dev.sluice.benchmarks.RedisCommandCount 2000}
 */
public final class RedisCommandCount {
  private RedisCommandCount() {}

  public static void main(String[] args) throws Exception {
    int decisions = args.length > 0 ? Integer.parseInt(args[0]) : 2_000;
    for (int keys : new int[] {1, 10_000}) {
      try (RedisFixture fx = new RedisFixture(keys)) {
        DecisionCount.touchAll(keys, i -> fx.sluice.tryAcquire(fx.keys[i]).allowed() & fx.bucket4j[i].tryConsume(1));
        for (int threads : new int[] {1, 2, 16}) {
          long s = DecisionCount.count(fx.sluiceCommands::sum, threads, decisions, i -> fx.sluice.tryAcquire(fx.keys[DecisionCount.pick(keys)]).allowed());
          System.out.printf("CMDS sluice %d %d %d %d%n", threads, keys, decisions, s);
          long b = DecisionCount.count(fx.bucket4jCommands::sum, threads, decisions, i -> fx.bucket4j[DecisionCount.pick(keys)].tryConsume(1));
          System.out.printf("CMDS bucket4j %d %d %d %d%n", threads, keys, decisions, b);
        }
      }
    }
  }
}

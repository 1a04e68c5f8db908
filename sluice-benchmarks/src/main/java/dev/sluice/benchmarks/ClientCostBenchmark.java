package dev.sluice.benchmarks;

import dev.sluice.internal.DeadlineTimer;
import dev.sluice.internal.StoredId;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * Client-side work the Redis and PostgreSQL backends do for every decision before any I/O, to
 * explain their client cost: {@link StoredId#key} (the SHA-256 id under which a key's state is
 * stored, computed per call with a fresh {@code MessageDigest}), and arming then disarming the
 * deadline of an asynchronous call: the {@link DeadlineTimer} wheel every store-backed limiter uses,
 * against a {@code ScheduledThreadPoolExecutor} with remove-on-cancel (what it used before), in
 * the same run.
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar ClientCostBenchmark -t 4 -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ClientCostBenchmark {
  private static final ScheduledThreadPoolExecutor EXECUTOR = executor();
  private static final DeadlineTimer.Task NOTHING = () -> { };
  private static final Runnable NOTHING_RUN = () -> { };

  String policy = "bench";
  String key = "user:42";

  private static ScheduledThreadPoolExecutor executor() {
    ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "bench-deadline");
      t.setDaemon(true);
      return t;
    });
    e.setRemoveOnCancelPolicy(true);
    return e;
  }

  @Benchmark
  public String storedIdKey() {
    return StoredId.key(policy, key);
  }

  /** Arms a 100 ms deadline on the wheel and disarms it, as a decision that beats its deadline does. */
  @Benchmark
  public DeadlineTimer.Timeout deadlineWheel() {
    DeadlineTimer.Timeout t = DeadlineTimer.shared().schedule(NOTHING, System.nanoTime() + 100_000_000L);
    t.cancel();
    return t;
  }

  /** The same with a scheduled executor: a locked heap insert and removal. */
  @Benchmark
  public boolean scheduledExecutor() {
    return EXECUTOR.schedule(NOTHING_RUN, 100, TimeUnit.MILLISECONDS).cancel(false);
  }
}

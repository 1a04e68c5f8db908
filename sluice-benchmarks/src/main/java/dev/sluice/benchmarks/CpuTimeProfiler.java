package dev.sluice.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU nanoseconds the benchmark's worker threads spent per operation ({@code ·cpu.ns/op}), from the
 * threads' own CPU clocks. On a shared machine a throughput score counts the time the workers waited
 * for a core; their CPU time does not, so two implementations compare by CPU cost even when other
 * work shares the cores (this machine has no hardware counters for {@code -prof perfnorm}). Caches
 * and the memory bus are still shared, so it narrows the noise rather than removing it.
 *
 * <p>Use: {@code java -jar benchmarks.jar SingleKeyBenchmark -prof dev.sluice.benchmarks.CpuTimeProfiler}.
 */
public final class CpuTimeProfiler implements InternalProfiler {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private Map<Long, Long> before = Map.of();

  @Override public String getDescription() {
    return "CPU time of the benchmark's worker threads per operation";
  }

  @Override public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
    before = workerCpu();
  }

  @Override public List<? extends Result<?>> afterIteration(BenchmarkParams benchmark, IterationParams iteration,
      IterationResult result) {
    long spent = 0;
    for (Map.Entry<Long, Long> e : workerCpu().entrySet()) {
      spent += e.getValue() - before.getOrDefault(e.getKey(), 0L);
    }
    long ops = result.getMetadata().getAllOps();
    return ops <= 0 ? List.of() : List.of(new ScalarResult("cpu.ns/op", (double) spent / ops, "ns/op", AggregationPolicy.AVG));
  }

  /** CPU nanoseconds so far of each live JMH worker thread, by thread id. */
  private static Map<Long, Long> workerCpu() {
    Map<Long, Long> cpu = new HashMap<>();
    for (ThreadInfo t : THREADS.getThreadInfo(THREADS.getAllThreadIds())) {
      if (t != null && t.getThreadName().contains("-jmh-worker-")) {
        long ns = THREADS.getThreadCpuTime(t.getThreadId());
        if (ns >= 0) {
          cpu.put(t.getThreadId(), ns);
        }
      }
    }
    return cpu;
  }
}

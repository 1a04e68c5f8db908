package dev.sluice.benchmarks;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Ticket;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * Probes of the JIT's escape analysis on the running JVM, to explain the bytes per decision that
 * {@link SingleKeyBenchmark} measures. Each method builds objects of the shape Sluice's memory tier
 * builds and reads only a boolean, so with {@code -prof gc} a non-zero {@code gc.alloc.rate.norm}
 * means that shape is not scalar-replaced on this JVM even when everything is inlined:
 * <ul>
 *   <li>{@link #decisionNoTicket}: one {@link Decision} (the refused path);</li>
 *   <li>{@link #ticketOnly}: one {@link Ticket};</li>
 *   <li>{@link #decisionWithTicket}: a Decision holding a Ticket (the allowed path);</li>
 *   <li>{@link #nestedObjects}: the same nesting with two plain classes;</li>
 *   <li>{@link #mergedDecisions}: an allowed or a refused Decision chosen at run time (both paths hot).</li>
 * </ul>
 *
 * <p>Run: {@code java -jar sluice-benchmarks/target/benchmarks.jar EscapeProbeBenchmark -prof gc}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class EscapeProbeBenchmark {
  Policy policy = Limiters.sluicePolicy("bench", Limiters.Load.ALLOWED);
  final Ticket.Issuer issuer = new Ticket.Issuer();
  long x = 5;

  @Benchmark
  public boolean decisionNoTicket() {
    return Decision.allowed(policy, x, x, null).allowed();
  }

  @Benchmark
  public boolean ticketOnly() {
    return issuer.issue(policy, "k", 1, x).permits() == 1;
  }

  @Benchmark
  public boolean decisionWithTicket() {
    return Decision.allowed(policy, x, x, issuer.issue(policy, "k", 1, x)).allowed();
  }

  @Benchmark
  public boolean nestedObjects() {
    return new Outer(x > 0, new Inner(x)).ok;
  }

  @Benchmark
  public boolean mergedDecisions() {
    Decision d = (x++ & 1) == 0
        ? Decision.allowed(policy, x, x, null)
        : Decision.refused(policy, Reason.LIMIT_EXCEEDED, x, x, x);
    return d.allowed();
  }

  /** 40 bytes, like a Ticket. */
  static final class Inner {
    final long v;
    long a;
    long b;

    Inner(long v) {
      this.v = v;
    }
  }

  static final class Outer {
    final boolean ok;
    final Inner inner;

    Outer(boolean ok, Inner inner) {
      this.ok = ok;
      this.inner = inner;
    }
  }
}

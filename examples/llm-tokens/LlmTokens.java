import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Settlement;
import dev.sluice.Ticker;
import dev.sluice.memory.MemoryRateLimiter;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * Per-tenant LLM tokens per minute: reserve a call's most (prompt plus max_tokens) before it, settle
 * what it used (prompt plus completion tokens) after it. See docs/cost.md.
 *
 * <pre>
 *   ./mvnw -q -pl sluice-core -am package -DskipTests
 *   java -cp sluice-core/target/classes examples/llm-tokens/LlmTokens.java
 * </pre>
 *
 * The limiter here is the memory tier on a simulated clock, so the run takes no time; with
 * RedisRateLimiter or JdbcRateLimiter (one budget for every instance) the calls are the same.
 */
public class LlmTokens {
  /** What the model answered: its token counts. */
  record Completion(long promptTokens, long completionTokens) {}

  /** A stand-in for the model: the completion stops on its own, usually well before max_tokens. */
  static Completion complete(long promptTokens, long maxTokens, SplittableRandom rnd) {
    return new Completion(promptTokens, Math.min(maxTokens, 50 + rnd.nextLong(maxTokens / 2)));
  }

  public static void main(String[] args) {
    Policy perTenant = Policy.slidingWindow("llm-tokens", 20_000, Duration.ofMinutes(1));
    ManualTicker clock = ManualTicker.at(1_700_000_000_000_000L);
    RateLimiter tokens = MemoryRateLimiter.builder(perTenant).ticker(clock).build();
    SplittableRandom rnd = new SplittableRandom(42);
    String[] tenants = {"acme", "globex"};
    long[] admitted = new long[2];
    long[] refused = new long[2];
    long[] used = new long[2];
    for (int call = 0; call < 120; call++) {              // 120 calls in one minute, alternating tenants
      clock.advance(Duration.ofMillis(500));
      int t = call % 2;
      long prompt = 200 + rnd.nextLong(300);
      long maxTokens = 1_000;
      Decision d = tokens.tryAcquire(tenants[t], prompt + maxTokens);   // reserve the most it can cost
      if (!d.allowed()) {
        refused[t]++;                                                   // 429, retry after d.retryAfter()
        continue;
      }
      Completion c = complete(prompt, maxTokens, rnd);
      long actual = c.promptTokens() + c.completionTokens();
      Settlement s = tokens.settle(d.ticket().orElseThrow(), actual);   // settle what it used
      if (s == Settlement.FAILED) {
        System.err.println("settlement failed: the reservation stays charged");
      }
      admitted[t]++;
      used[t] += actual;
    }
    for (int t = 0; t < 2; t++) {
      System.out.printf("%s: %d calls admitted, %d refused, %d tokens used, %d of %d left this minute%n", tenants[t],
          admitted[t], refused[t], used[t], tokens.peek(tenants[t]).remaining(), perTenant.limit());
    }
  }
}

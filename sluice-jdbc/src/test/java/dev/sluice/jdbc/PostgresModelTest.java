package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Decision;
import dev.sluice.testing.ManualTicker;
import dev.sluice.Policy;
import dev.sluice.Reason;
import dev.sluice.Refund;
import dev.sluice.Ticker;
import dev.sluice.Ticket;
import dev.sluice.model.Outcome;
import dev.sluice.model.ReferenceModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Seeded random traces replayed through the SQL statements and through {@link ReferenceModel}
 * directly: every decision field and every refund result equal, for every algorithm, including
 * clock jumps across windows, a clock behind the state, refunds after the window rolled, resets.
 */
class PostgresModelTest {
  @RegisterExtension static final PostgresTable db = new PostgresTable(4);

  static Stream<Policy> policies() {
    return Stream.of(
        Policy.fixedWindow(PostgresTestSupport.name("fw"), 7, Duration.ofMillis(100)),
        Policy.fixedWindow(PostgresTestSupport.name("fw"), 1, Duration.ofMillis(3)),
        Policy.slidingWindow(PostgresTestSupport.name("sw"), 9, Duration.ofMillis(50)),
        Policy.slidingWindow(PostgresTestSupport.name("sw"), 3, Duration.ofMillis(7)),
        Policy.tokenBucket(PostgresTestSupport.name("tb"), 10, 3, Duration.ofMillis(40)),
        Policy.tokenBucket(PostgresTestSupport.name("tb"), 4, 7, Duration.ofMillis(9)),
        Policy.gcra(PostgresTestSupport.name("gc"), 5, Duration.ofMillis(30), 8),
        Policy.gcra(PostgresTestSupport.name("gc"), 3, Duration.ofMillis(7), 2));
  }

  @ParameterizedTest @MethodSource("policies")
  void replaysTheReferenceModel(Policy policy) {
    long seed = policy.algorithm().toString().hashCode();  // not the name, which is random per run
    Random rnd = new Random(seed);
    ManualTicker ticker = ManualTicker.at(1_700_000_000_000_000L);
    long window = policy.algorithm() instanceof dev.sluice.Algorithm.TokenBucket tb ? tb.refillPeriodMicros()
        : policy.algorithm() instanceof dev.sluice.Algorithm.Gcra g ? g.periodMicros()
        : policy.algorithm() instanceof dev.sluice.Algorithm.FixedWindow fw ? fw.windowMicros()
        : ((dev.sluice.Algorithm.SlidingWindow) policy.algorithm()).windowMicros();
    try (JdbcRateLimiter limiter = JdbcRateLimiter.builder(policy, db.ds()).table(db.table()).ticker(ticker)
        .timeout(Duration.ofSeconds(5)).build()) {
      Map<String, long[]> model = new HashMap<>();
      List<Ticket> tickets = new ArrayList<>();
      List<Long> stamps = new ArrayList<>();
      String[] keys = {"k1", "k2 with space", "\u00e9\ud83d\ude00"};
      for (int i = 0; i < 400; i++) {
        String key = keys[rnd.nextInt(keys.length)];
        long[] st = model.computeIfAbsent(key, k -> new long[3]);
        long now = ticker.nowMicros();
        Outcome out = new Outcome();
        int op = rnd.nextInt(100);
        String ctx = "seed " + seed + " step " + i + " op " + op + " " + policy;
        if (op < 60) {
          long permits = 1 + rnd.nextInt((int) Math.min(policy.limit(), 3));
          Decision d = limiter.tryAcquire(key, permits);
          ReferenceModel.acquire(policy.algorithm(), st, now, permits, out);
          assertThat(d.allowed()).as(ctx).isEqualTo(out.allowed());
          assertThat(d.reason()).as(ctx).isEqualTo(out.allowed() ? Reason.WITHIN_LIMIT : Reason.LIMIT_EXCEEDED);
          assertThat(d.remaining()).as(ctx).isEqualTo(Math.max(0, out.remaining()));
          assertThat(d.resetAtMicros()).as(ctx).isEqualTo(out.resetAt());
          assertThat(d.retryAfterMicros()).as(ctx).isEqualTo(out.allowed() ? 0 : Math.max(1, out.retryAfter()));
          assertThat(d.policy()).isEqualTo(policy);
          if (d.allowed()) {
            Ticket t = d.ticket().orElseThrow();
            assertThat(t.stamp()).as(ctx).isEqualTo(out.stamp());
            tickets.add(t);
            stamps.add(out.stamp());
          }
        } else if (op < 72) {
          Decision d = limiter.peek(key);
          ReferenceModel.peek(policy.algorithm(), st, now, out);
          assertThat(d.allowed()).as(ctx).isEqualTo(out.allowed());
          assertThat(d.remaining()).as(ctx).isEqualTo(Math.max(0, out.remaining()));
          assertThat(d.resetAtMicros()).as(ctx).isEqualTo(out.resetAt());
          assertThat(d.retryAfterMicros()).as(ctx).isEqualTo(out.allowed() ? 0 : Math.max(1, out.retryAfter()));
        } else if (op < 82 && !tickets.isEmpty()) {
          int idx = rnd.nextInt(tickets.size());
          Ticket t = tickets.remove(idx);
          long stamp = stamps.remove(idx);
          long[] kst = model.computeIfAbsent(t.key(), k -> new long[3]);
          Refund r = limiter.refund(t);
          boolean live = ReferenceModel.ticketLive(policy.algorithm(), stamp, now); // past its life: no effect (issue 26)
          if (live) {
            ReferenceModel.refund(policy.algorithm(), kst, now, t.permits(), stamp, out);
          }
          assertThat(r).as(ctx).isEqualTo(live && out.wrote() ? Refund.APPLIED : Refund.NO_EFFECT);
          assertThat(limiter.refund(t)).as("second refund of one ticket").isEqualTo(Refund.NO_EFFECT);
        } else if (op < 84) {
          limiter.reset(key);
          model.put(key, new long[3]);
        } else if (op < 97) {
          ticker.advanceMicros(rnd.nextInt((int) Math.min(window, 1_000_000)) + 1);
        } else if (op < 99) {
          ticker.advanceMicros(window * (1 + rnd.nextInt(3)) + rnd.nextInt(1000));
        } else {
          ticker.advanceMicros(-rnd.nextInt((int) Math.min(window, 100_000)));
        }
      }
    }
  }
}

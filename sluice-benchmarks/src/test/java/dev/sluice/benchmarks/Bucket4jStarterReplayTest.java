package dev.sluice.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.RateLimiters;
import dev.sluice.memory.MemoryRateLimiter;
import dev.sluice.testing.ManualTicker;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.TimeMeter;
import io.github.bucket4j.local.LocalBucketBuilder;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * Issue 32's evidence for {@code docs/spring-boot.md}'s bucket4j migration table: configurations
 * of bucket4j-spring-boot-starter's README kind, each written as the starter's YAML (in comments) and
 * as the Bucket4j bandwidths the starter builds from it, translated with the table into Sluice
 * policies on the memory tier, and replayed on one seeded 1,000-request trace against Bucket4j
 * itself with the same timestamps (its {@link TimeMeter} reads the {@link ManualTicker} the Sluice
 * side reads). Greedy bandwidths (one, two on one rate limit, a refill below the capacity) admit the
 * same requests one by one, so the same totals; {@code refill-speed: interval} has no exact
 * equivalent, and the last test pins down where and why its nearest translation differs.
 */
class Bucket4jStarterReplayTest {
  private static final long START = 1_700_000_000_000_000L;
  private static final long SEED = 32;
  private static final int REQUESTS = 1_000;
  private static final String[] ADDRESSES = {"203.0.113.7", "203.0.113.8", "198.51.100.20"};

  /** One request of the trace: when (epoch microseconds) and from which client address. */
  record Request(long atMicros, String address) {}

  /**
   * 1,000 requests: mostly single requests about 2 s apart (exponential gaps, to the microsecond),
   * bursts of 5 to 20 requests up to 50 ms apart from one address,
   * and now and then an idle gap of 1 to 5 minutes. Addresses are skewed: 60 %, 30 %, 10 %.
   */
  static List<Request> trace(long seed) {
    Random rnd = new Random(seed);
    List<Request> out = new ArrayList<>(REQUESTS);
    long t = START;
    while (out.size() < REQUESTS) {
      double u = rnd.nextDouble();
      if (u < 0.12) {
        String a = address(rnd);
        int n = 5 + rnd.nextInt(16);
        for (int i = 0; i < n && out.size() < REQUESTS; i++) {
          t += rnd.nextInt(50_001);
          out.add(new Request(t, a));
        }
      } else if (u < 0.15) {
        t += 60_000_000L + (long) (rnd.nextDouble() * 240_000_000L);
        out.add(new Request(t, address(rnd)));
      } else {
        t += 1 + (long) (-Math.log(1 - rnd.nextDouble()) * 2_000_000L);
        out.add(new Request(t, address(rnd)));
      }
    }
    return out;
  }

  private static String address(Random rnd) {
    double u = rnd.nextDouble();
    return u < 0.6 ? ADDRESSES[0] : u < 0.9 ? ADDRESSES[1] : ADDRESSES[2];
  }

  // ---------------------------------------------------------------------------------------------
  // bucket4j's side, as the starter builds it
  // ---------------------------------------------------------------------------------------------

  /** A bucket4j-spring-boot-starter {@code bandwidths[]} entry (its {@code BandWidth} properties). */
  record StarterBandwidth(long capacity, Long refillCapacity, long time, ChronoUnit unit, boolean interval) {}

  /**
   * The starter's translation of its properties into Bucket4j (its
   * {@code prepareBucket4jConfigurationBuilder}, restated): refill {@code refill-capacity} (default:
   * the capacity) every {@code time unit}, greedily or, under {@code refill-speed: interval}, at
   * once at the end of each interval.
   */
  static BucketConfiguration starterConfiguration(StarterBandwidth... bandwidths) {
    var config = BucketConfiguration.builder();
    for (StarterBandwidth b : bandwidths) {
      long refill = b.refillCapacity() != null ? b.refillCapacity() : b.capacity();
      Duration period = Duration.of(b.time(), b.unit());
      Bandwidth bw = b.interval()
          ? Bandwidth.builder().capacity(b.capacity()).refillIntervally(refill, period).build()
          : Bandwidth.builder().capacity(b.capacity()).refillGreedy(refill, period).build();
      config.addLimit(bw);
    }
    return config.build();
  }

  /**
   * Bucket4j on {@code clock} (its {@link TimeMeter} reads it, in nanoseconds): one bucket per cache
   * key, created at the key's first request (the starter's proxy manager creates a bucket's state on
   * its first command), one token per request ({@code num-tokens}' default) through
   * {@code tryConsumeAndReturnRemaining}.
   */
  static Predicate<Request> bucket4j(ManualTicker clock, Function<Request, String> cacheKey, BucketConfiguration config) {
    TimeMeter meter = new TimeMeter() {
      @Override public long currentTimeNanos() {
        return clock.nowMicros() * 1_000;
      }

      @Override public boolean isWallClockBased() {
        return false;
      }
    };
    Map<String, Bucket> buckets = new HashMap<>();
    return r -> buckets.computeIfAbsent(cacheKey.apply(r), k -> {
      LocalBucketBuilder b = Bucket.builder().withCustomTimePrecision(meter);
      for (Bandwidth bw : config.getBandwidths()) {
        b.addLimit(bw);
      }
      return b.build();
    }).tryConsumeAndReturnRemaining(1).isConsumed();
  }

  // ---------------------------------------------------------------------------------------------
  // Sluice's side, as the migration table translates it
  // ---------------------------------------------------------------------------------------------

  /** One memory-tier limiter per policy on {@code clock}; several are {@code RateLimiters.all} (a rule's {@code policies: [a, b]}). */
  static Predicate<Request> sluice(ManualTicker clock, Function<Request, String> key, Policy... policies) {
    RateLimiter[] legs = new RateLimiter[policies.length];
    for (int i = 0; i < policies.length; i++) {
      legs[i] = MemoryRateLimiter.builder(policies[i]).ticker(clock).build();
    }
    RateLimiter limiter = legs.length == 1 ? legs[0] : RateLimiters.all(legs);
    return r -> limiter.tryAcquire(key.apply(r)).allowed();
  }

  /**
   * Replays {@code trace} on one clock: set to each request's instant, then every side decides the
   * request; {@code result[side][request]} is whether that side admitted it.
   */
  @SafeVarargs
  static boolean[][] replay(List<Request> trace, ManualTicker clock, Predicate<Request>... sides) {
    boolean[][] admitted = new boolean[sides.length][trace.size()];
    for (int i = 0; i < trace.size(); i++) {
      Request r = trace.get(i);
      clock.set(r.atMicros());
      for (int j = 0; j < sides.length; j++) {
        admitted[j][i] = sides[j].test(r);
      }
    }
    return admitted;
  }

  /** Sluice's key for {@code key: "'all'"} (bucket4j's default: one bucket for everyone). */
  private static String all(Request r) {
    return "value:all";
  }

  /** Sluice's key for {@code key: remoteAddress} (bucket4j's {@code cache-key: getRemoteAddr()}). */
  private static String remoteAddress(Request r) {
    return "ip:" + r.address();
  }

  private static int count(boolean[] admitted) {
    int n = 0;
    for (boolean a : admitted) {
      n += a ? 1 : 0;
    }
    return n;
  }

  private static int firstDifference(boolean[] a, boolean[] b) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] != b[i]) {
        return i;
      }
    }
    return -1;
  }


  private static final List<Request> TRACE = trace(SEED);

  /** Both sides admitted the same requests, one by one (so the same total). */
  private static void assertSameAdmissions(String config, boolean[] bucket4j, boolean[] sluice) {
    System.out.printf("%s: bucket4j admitted %d of %d, Sluice %d%n", config, count(bucket4j), REQUESTS, count(sluice));
    assertThat(count(sluice)).as("%s: admission total", config).isEqualTo(count(bucket4j));
    assertThat(firstDifference(bucket4j, sluice)).as("%s: first request decided differently", config).isEqualTo(-1);
  }

  @Test
  void traceHasBurstsIdleGapsAndSeveralAddresses() {
    assertThat(TRACE).hasSize(REQUESTS);
    int inBursts = 0;
    int idle = 0;
    for (int i = 1; i < TRACE.size(); i++) {
      long gap = TRACE.get(i).atMicros() - TRACE.get(i - 1).atMicros();
      assertThat(gap).isNotNegative();
      inBursts += gap < 50_001 ? 1 : 0;
      idle += gap >= 60_000_000L ? 1 : 0;
    }
    assertThat(inBursts).as("requests inside a burst").isGreaterThan(100);
    assertThat(idle).as("idle gaps of a minute or more").isGreaterThan(10);
    assertThat(TRACE.stream().map(Request::address).distinct()).hasSize(ADDRESSES.length);
  }

  @Test
  void readmeFivePerTenSecondsForEveryone() {
    // bucket4j-spring-boot-starter's README, its first example (no cache-key: one bucket for all):
    //   bucket4j:
    //     filters:
    //     - cache-name: buckets
    //       url: .*
    //       rate-limits:
    //       - bandwidths:
    //         - capacity: 5
    //           time: 10
    //           unit: seconds
    BucketConfiguration starter = starterConfiguration(new StarterBandwidth(5, null, 10, ChronoUnit.SECONDS, false));
    // The table: capacity/time/unit, greedy -> token-bucket; no cache-key -> key "'all'":
    //   sluice:
    //     policies:
    //     - name: readme
    //       algorithm: token-bucket
    //       capacity: 5
    //       refill-tokens: 5
    //       refill-period: 10s
    //     http:
    //       rules:
    //       - patterns: ["/**"]
    //         policy: readme
    //         key: "'all'"
    // The row's "(or gcra)": rate = refill-tokens per refill-period, burst = capacity.
    ManualTicker clock = ManualTicker.at(START);
    boolean[][] a = replay(TRACE, clock, bucket4j(clock, r -> "all", starter),
        sluice(clock, Bucket4jStarterReplayTest::all, Policy.tokenBucket("readme", 5, 5, Duration.ofSeconds(10))),
        sluice(clock, Bucket4jStarterReplayTest::all, Policy.gcra("readme", 5, Duration.ofSeconds(10), 5)));
    assertSameAdmissions("5 per 10 s for everyone", a[0], a[1]);
    assertSameAdmissions("5 per 10 s for everyone, gcra", a[0], a[2]);
    assertThat(count(a[1])).as("the limit binds").isLessThan(REQUESTS);
  }

  @Test
  void twoBandwidthsOnOneRateLimitForEveryone() {
    // Two bandwidths on one rate limit (README's /users* filter has two; these bind on this trace).
    // They are one bucket, consumed from both or neither; strategy (first/all) is about several
    // rate limits on a filter and plays no part here:
    //   bucket4j:
    //     filters:
    //     - cache-name: buckets
    //       url: /users.*
    //       strategy: first
    //       rate-limits:
    //       - bandwidths:
    //         - capacity: 5
    //           time: 10
    //           unit: seconds
    //         - capacity: 100
    //           time: 1
    //           unit: hours
    BucketConfiguration starter = starterConfiguration(new StarterBandwidth(5, null, 10, ChronoUnit.SECONDS, false),
        new StarterBandwidth(100, null, 1, ChronoUnit.HOURS, false));
    // The table: several bandwidths -> rules[].policies: [a, b], each charged, all or nothing:
    //   sluice:
    //     policies:
    //     - {name: burst, algorithm: token-bucket, capacity: 5, refill-tokens: 5, refill-period: 10s}
    //     - {name: hourly, algorithm: token-bucket, capacity: 100, refill-tokens: 100, refill-period: 1h}
    //     http:
    //       rules:
    //       - patterns: ["/users/**"]
    //         policies: [burst, hourly]
    //         key: "'all'"
    Policy burst = Policy.tokenBucket("burst", 5, 5, Duration.ofSeconds(10));
    Policy hourly = Policy.tokenBucket("hourly", 100, 100, Duration.ofHours(1));
    ManualTicker clock = ManualTicker.at(START);
    boolean[][] a = replay(TRACE, clock, bucket4j(clock, r -> "all", starter),
        sluice(clock, Bucket4jStarterReplayTest::all, burst, hourly),
        sluice(clock, Bucket4jStarterReplayTest::all, burst),
        sluice(clock, Bucket4jStarterReplayTest::all, hourly));
    assertSameAdmissions("5 per 10 s and 100 per hour for everyone", a[0], a[1]);
    // Both legs bind: each alone decides some request otherwise than the two together.
    assertThat(firstDifference(a[1], a[2])).as("burst alone").isNotNegative();
    assertThat(firstDifference(a[1], a[3])).as("hourly alone").isNotNegative();
  }

  @Test
  void tenRefillingOnePerSecondPerAddress() {
    // refill-capacity below the capacity, one bucket per client address:
    //   bucket4j:
    //     filters:
    //     - cache-name: buckets
    //       url: .*
    //       rate-limits:
    //       - cache-key: getRemoteAddr()
    //         bandwidths:
    //         - capacity: 10
    //           refill-capacity: 1
    //           time: 1
    //           unit: seconds
    BucketConfiguration starter = starterConfiguration(new StarterBandwidth(10, 1L, 1, ChronoUnit.SECONDS, false));
    // The table: refill-capacity -> token-bucket's refill-tokens; cache-key getRemoteAddr() -> key remoteAddress:
    //   sluice:
    //     policies:
    //     - {name: api, algorithm: token-bucket, capacity: 10, refill-tokens: 1, refill-period: 1s}
    //     http:
    //       rules:
    //       - patterns: ["/**"]
    //         policy: api
    //         key: remoteAddress
    ManualTicker clock = ManualTicker.at(START);
    boolean[][] a = replay(TRACE, clock, bucket4j(clock, Request::address, starter),
        sluice(clock, Bucket4jStarterReplayTest::remoteAddress, Policy.tokenBucket("api", 10, 1, Duration.ofSeconds(1))),
        sluice(clock, Bucket4jStarterReplayTest::remoteAddress, Policy.gcra("api", 1, Duration.ofSeconds(1), 10)));
    assertSameAdmissions("10, refilling 1 per second, per address", a[0], a[1]);
    assertSameAdmissions("10, refilling 1 per second, per address, gcra", a[0], a[2]);
    assertThat(count(a[1])).as("the limit binds").isLessThan(REQUESTS);
  }

  /**
   * {@code refill-speed: interval} is the one translation that is not exact, and the table says so:
   * with {@code refill-capacity} equal to the capacity (the default), a bucket4j bucket is refilled
   * to full at {@code t0 + k * time} for ever, {@code t0} being its first request, so its windows
   * keep that first phase through any idle gap; a Sluice {@code fixed-window} opens a window at a
   * key's first request after the last one ended. Both admit at most {@code limit} per window of
   * their own; the windows differ from the first request that arrives after a key's first window,
   * and so do the decisions. Each side is checked against a ten-line model of its windows, request
   * by request, so the difference is exactly the phase and nothing else.
   */
  @Test
  void intervalRefillKeepsTheFirstRequestsPhaseFixedWindowDoesNot() {
    //   bucket4j:
    //     filters:
    //     - cache-name: buckets
    //       url: .*
    //       rate-limits:
    //       - cache-key: getRemoteAddr()
    //         bandwidths:
    //         - capacity: 10
    //           time: 1
    //           unit: minutes
    //           refill-speed: interval
    long window = 60_000_000L;
    BucketConfiguration starter = starterConfiguration(new StarterBandwidth(10, null, 1, ChronoUnit.MINUTES, true));
    // The table's nearest: {name: login, algorithm: fixed-window, limit: 10, window: 1m}, key remoteAddress.
    ManualTicker clock = ManualTicker.at(START);
    boolean[][] a = replay(TRACE, clock, bucket4j(clock, Request::address, starter),
        sluice(clock, Bucket4jStarterReplayTest::remoteAddress, Policy.fixedWindow("login", 10, Duration.ofMinutes(1))));
    boolean[] bucket4j = a[0];
    boolean[] sluice = a[1];
    System.out.printf("10 per minute, interval, per address: bucket4j admitted %d of %d, Sluice fixed-window %d%n",
        count(bucket4j), REQUESTS, count(sluice));

    assertThat(firstDifference(bucket4j, windows(TRACE, 10, window, true))).as("bucket4j = windows on its first request's grid").isEqualTo(-1);
    assertThat(firstDifference(sluice, windows(TRACE, 10, window, false))).as("Sluice = windows opened by a request").isEqualTo(-1);
    int first = firstDifference(bucket4j, sluice);
    assertThat(first).as("the two differ on this trace").isPositive();
    Request r = TRACE.get(first);
    long keyStart = TRACE.stream().filter(q -> q.address().equals(r.address())).findFirst().orElseThrow().atMicros();
    assertThat(r.atMicros() - keyStart).as("they agree throughout each key's first window").isGreaterThanOrEqualTo(window);
  }

  /**
   * Per address, at most {@code limit} admissions per window: on the grid {@code t0 + k * window} of
   * the address's first request ({@code grid}), or in windows each opened by the first request after
   * the last one ended.
   */
  private static boolean[] windows(List<Request> trace, long limit, long window, boolean grid) {
    Map<String, long[]> state = new HashMap<>(); // address -> {window start, count}
    boolean[] admitted = new boolean[trace.size()];
    for (int i = 0; i < trace.size(); i++) {
      Request r = trace.get(i);
      long t = r.atMicros();
      long[] s = state.computeIfAbsent(r.address(), a -> new long[] {t, 0});
      if (t - s[0] >= window) {
        s[0] = grid ? t - (t - s[0]) % window : t;
        s[1] = 0;
      }
      admitted[i] = s[1] < limit;
      s[1] += admitted[i] ? 1 : 0;
    }
    return admitted;
  }
}

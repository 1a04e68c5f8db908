package dev.sluice.internal;

import dev.sluice.Algorithm;
import dev.sluice.Algorithm.FixedWindow;
import dev.sluice.Algorithm.Gcra;
import dev.sluice.Algorithm.SlidingLog;
import dev.sluice.Algorithm.SlidingWindow;
import dev.sluice.Algorithm.TokenBucket;
import dev.sluice.Policy;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import java.util.stream.Collectors;

/**
 * What is known about each algorithm besides its math (which is the reference model's): its name in
 * configuration ({@link Algorithm#id()}), its parameters there, the span of time its quota covers, and
 * whether a store that keeps a fixed-size state per key can run it. The records in {@link Algorithm}
 * hold the numbers and their bounds; every front end, backend and the kit ask here for the rest, so
 * adding an algorithm is one constant (and its math), never a list in each module.
 *
 * <p>Every algorithm is a rate: {@link Role#RATE} permits per {@link Role#PERIOD}, with up to
 * {@link Role#BURST} at once; the buckets (token bucket, GCRA) name their burst, a window's burst is
 * its limit. That one reading is what a configuration in another grammar (Envoy's
 * {@code requests_per_unit} per {@code unit}) maps onto, and what the quota's span is computed from.
 */
public enum AlgorithmKind {
  FIXED_WINDOW("fixed-window", FixedWindow.class, true, v -> new FixedWindow(v[0], v[1]),
      rate("limit", FixedWindow::limit), period("window", FixedWindow::windowMicros)),
  SLIDING_WINDOW("sliding-window", SlidingWindow.class, true, v -> new SlidingWindow(v[0], v[1]),
      rate("limit", SlidingWindow::limit), period("window", SlidingWindow::windowMicros)),
  TOKEN_BUCKET("token-bucket", TokenBucket.class, true, v -> new TokenBucket(v[0], v[1], v[2]),
      burst("capacity", TokenBucket::capacity), rate("refill-tokens", TokenBucket::refillTokens),
      period("refill-period", TokenBucket::refillPeriodMicros)),
  GCRA("gcra", Gcra.class, true, v -> new Gcra(v[0], v[1], v[2]),
      rate("rate", Gcra::rate), period("period", Gcra::periodMicros), burst("burst", Gcra::burst)),
  /** The exact log: one entry per admitted request, so its state grows with its limit. */
  SLIDING_LOG("sliding-log", SlidingLog.class, false, v -> new SlidingLog(v[0], v[1]),
      rate("limit", SlidingLog::limit), period("window", SlidingLog::windowMicros));

  /** What a parameter is in the algorithm read as a rate (see the class comment). */
  public enum Role { RATE, PERIOD, BURST }

  /** One parameter: its name in configuration, its role, and the record component that holds it. */
  public static final class Parameter {
    private final String name;
    private final Role role;
    private final ToLongFunction<Algorithm> read;

    private Parameter(String name, Role role, ToLongFunction<Algorithm> read) {
      this.name = name;
      this.role = role;
      this.read = read;
    }

    /** Its name in configuration: {@code refill-period}. */
    public String name() {
      return name;
    }

    /** Whether it is a duration (in configuration a text such as {@code 1s}, in the record whole microseconds). */
    public boolean period() {
      return role == Role.PERIOD;
    }

    /** The name the {@link Policy} factories give it in their messages ({@code refill period}). */
    String label() {
      return name.replace('-', ' ');
    }

    @Override public String toString() {
      return name;
    }
  }

  private static final AlgorithmKind[] KINDS = values(); // values() copies its array on every call

  private final String id;
  private final Class<? extends Algorithm> type;
  private final boolean fixedSize;
  private final Function<long[], Algorithm> build;
  private final List<Parameter> parameters;
  private final int rateAt; // the parameters' indexes of each role
  private final int periodAt;
  private final int burstAt; // -1: a window, whose burst is its rate

  AlgorithmKind(String id, Class<? extends Algorithm> type, boolean fixedSize, Function<long[], Algorithm> build,
                Parameter... parameters) {
    this.id = id;
    this.type = type;
    this.fixedSize = fixedSize;
    this.build = build;
    this.parameters = List.of(parameters);
    this.rateAt = index(parameters, Role.RATE);
    this.periodAt = index(parameters, Role.PERIOD);
    this.burstAt = index(parameters, Role.BURST);
  }

  /** Parameter {@code i} ({@link #parameters()} order) of {@code a}, of this kind; a period in microseconds. */
  public long value(Algorithm a, int i) {
    return parameters.get(i).read.applyAsLong(a);
  }

  /** The kind of {@code a}. */
  public static AlgorithmKind of(Algorithm a) {
    for (AlgorithmKind k : KINDS) {
      if (k.type.isInstance(a)) {
        return k;
      }
    }
    throw new IllegalArgumentException("algorithm " + a + " has no kind"); // unreachable: Algorithm is sealed
  }

  /**
   * The kind named {@code id} in configuration; an {@link IllegalArgumentException} naming the value
   * and every accepted name otherwise (the caller puts where it stands in front).
   */
  public static AlgorithmKind parse(String id) {
    AlgorithmKind k = find(id);
    if (k == null) {
      throw new IllegalArgumentException("unknown algorithm '" + id + "'; use one of " + ids(List.of(KINDS), ", "));
    }
    return k;
  }

  /** The kind whose {@link #id()} stands in {@code value} from {@code from} to {@code to} (exclusive), or null: a stored tag, read in place. */
  public static AlgorithmKind find(String value, int from, int to) {
    for (AlgorithmKind k : KINDS) {
      if (k.id.length() == to - from && value.regionMatches(from, k.id, 0, k.id.length())) {
        return k;
      }
    }
    return null;
  }

  private static AlgorithmKind find(String id) {
    return id == null ? null : find(id, 0, id.length());
  }

  /** The name in configuration and in stored state: {@code fixed-window}, {@code sliding-window}, {@code token-bucket}, {@code gcra}, {@code sliding-log}. */
  public String id() {
    return id;
  }

  /** The parameters in configuration, in the record's order: what an entry must give, and all it may. */
  public List<Parameter> parameters() {
    return parameters;
  }

  /** {@code limit, window}: the parameters' names, for messages. */
  public String parameterNames() {
    return parameters.stream().map(Parameter::name).collect(Collectors.joining(", "));
  }

  /** Whether it has a burst of its own (the buckets); a window's burst is its limit. */
  public boolean hasBurst() {
    return burstAt >= 0;
  }

  /** The kinds with a burst of their own, for messages: {@code token-bucket and gcra}. */
  public static String withBurst() {
    return ids(Arrays.stream(KINDS).filter(AlgorithmKind::hasBurst).toList(), " and ");
  }

  /**
   * This kind's algorithm from its parameters, each read by name in {@link #parameters()} order
   * ({@code count} for counts, {@code period} for periods), then checked as the {@link Policy}
   * factories check them, with their messages: a missing parameter is reported before a bad period.
   */
  public Algorithm algorithm(ToLongFunction<String> count, Function<String, Duration> period) {
    int n = parameters.size();
    long[] v = new long[n];
    Duration[] periods = new Duration[n];
    for (int i = 0; i < n; i++) {
      Parameter p = parameters.get(i);
      if (p.period()) {
        periods[i] = period.apply(p.name);
      } else {
        v[i] = count.applyAsLong(p.name);
      }
    }
    for (int i = 0; i < n; i++) {
      if (periods[i] != null) {
        v[i] = Checks.window(parameters.get(i).label(), periods[i]);
      }
    }
    return build.apply(v); // the record checks them
  }

  /**
   * This kind's algorithm from its values in {@link #parameters()} order (periods in microseconds),
   * checked by the record: an {@link IllegalArgumentException} naming the bad value otherwise.
   */
  public Algorithm algorithm(long... values) {
    if (values.length != parameters.size()) {
      throw new IllegalArgumentException(id + " takes " + parameters.size() + " values (" + parameterNames() + "), not " + values.length);
    }
    return build.apply(values.clone());
  }

  /**
   * {@code a} as stored text, its kind's id and values: {@code token-bucket:100:10:1000000}. The one
   * form a store that keeps an algorithm as text (an override) writes, read back by {@link #fromText}.
   */
  public static String text(Algorithm a) {
    AlgorithmKind k = of(a);
    StringBuilder b = new StringBuilder(k.id);
    for (int i = 0; i < k.parameters.size(); i++) {
      b.append(':').append(k.value(a, i));
    }
    return b.toString();
  }

  /**
   * The algorithm {@link #text} wrote; an {@link IllegalArgumentException} for anything else (a
   * store's value Sluice did not write), naming the value.
   */
  public static Algorithm fromText(String text) {
    String[] parts = text == null ? new String[0] : text.split(":", -1);
    AlgorithmKind k = parts.length == 0 ? null : find(parts[0]);
    if (k == null || parts.length != k.parameters.size() + 1) {
      throw new IllegalArgumentException("'" + text + "' is not an algorithm as Sluice stores one (<kind>:<values>)");
    }
    long[] v = new long[parts.length - 1];
    for (int i = 0; i < v.length; i++) {
      String d = parts[i + 1];
      if (d.isEmpty() || d.length() > 16 || !d.chars().allMatch(c -> c >= '0' && c <= '9')) {
        throw new IllegalArgumentException("'" + text + "' is not an algorithm as Sluice stores one: value '" + d + "'");
      }
      v[i] = Long.parseLong(d);
    }
    return k.algorithm(v);
  }

  /**
   * This kind's algorithm of {@code rate} permits per {@code period} with up to {@code burstPermits} at
   * once; a kind without a burst of its own ({@link #hasBurst()}) ignores {@code burstPermits}.
   */
  public Algorithm perPeriod(long rate, Duration period, long burstPermits) {
    return algorithm(name -> burstAt >= 0 && parameters.get(burstAt).name.equals(name) ? burstPermits : rate, name -> period);
  }

  /** The period {@code a}'s rate is counted per, in microseconds: its window, refill period or period. */
  public static long periodMicros(Algorithm a) {
    AlgorithmKind k = of(a);
    return k.value(a, k.periodAt);
  }

  /**
   * The span of time {@code a}'s quota covers, in microseconds: the window, or for a bucket the time
   * its rate takes to refill its burst from empty, rounded up. It is the {@code w} of the
   * {@code RateLimit-Policy} header and the base of a ticket's life
   * ({@link dev.sluice.model.ReferenceModel#ticketExpiresAt}).
   */
  public static long quotaMicros(Algorithm a) {
    AlgorithmKind k = of(a);
    long period = periodMicros(a);
    if (k.burstAt < 0) {
      return period;
    }
    // burst x period <= 2^52 by the records' validation, so this cannot overflow.
    return -Math.floorDiv(-k.value(a, k.burstAt) * period, k.value(a, k.rateAt));
  }

  /**
   * Whether a store that keeps a fixed-size state per key (a row, a record, a slot) can run it: every
   * kind but the sliding log.
   */
  public boolean fixedSize() {
    return fixedSize;
  }

  /**
   * {@code policy}, when its algorithm has a fixed-size state; else the one refusal of a backend that
   * keeps only such state ({@code backend} names it, as the subject of a sentence: {@code PostgreSQL}),
   * naming the policy, the algorithm, what the backend runs and the fix. Such a backend states this
   * once, for its builder and for per-call policies alike.
   */
  public static Policy requireFixedSize(Policy policy, String backend) {
    AlgorithmKind k = of(policy.algorithm());
    if (!k.fixedSize) {
      List<AlgorithmKind> runs = Arrays.stream(KINDS).filter(AlgorithmKind::fixedSize).toList();
      throw new IllegalArgumentException("policy '" + policy.name() + "' uses " + k.id + ", whose state grows with its limit; "
          + backend + " keeps a fixed-size state per key and runs " + ids(runs, " and ") + ": use one of those, or "
          + k.id + " on MemoryRateLimiter or Redis");
    }
    return policy;
  }

  /**
   * The one message for a policy whose algorithm a backend ({@code store}) does not run: a store that
   * runs exactly the fixed-size algorithms says so as {@link #requireFixedSize} does, any other names
   * what it runs.
   */
  public static IllegalArgumentException notRun(Policy policy, String store, java.util.Set<Class<? extends Algorithm>> runs) {
    AlgorithmKind k = of(policy.algorithm());
    List<AlgorithmKind> run = Arrays.stream(KINDS).filter(x -> runs.contains(x.type)).toList();
    if (!k.fixedSize && run.equals(Arrays.stream(KINDS).filter(AlgorithmKind::fixedSize).toList())) {
      try {
        requireFixedSize(policy, store);
      } catch (IllegalArgumentException e) {
        return e;
      }
    }
    return new IllegalArgumentException("policy '" + policy.name() + "' uses " + k.id + ", which " + store + " does not run; "
        + store + " runs " + ids(run, " and ") + ": use one of those, or " + k.id + " on MemoryRateLimiter");
  }

  private static int index(Parameter[] parameters, Role role) {
    for (int i = 0; i < parameters.length; i++) {
      if (parameters[i].role == role) {
        return i;
      }
    }
    return -1;
  }

  private static String ids(List<AlgorithmKind> kinds, String lastSeparator) {
    List<String> ids = kinds.stream().map(AlgorithmKind::id).toList();
    int last = ids.size() - 1;
    return last == 0 ? ids.get(0) : String.join(", ", ids.subList(0, last)) + lastSeparator + ids.get(last);
  }

  private static <A extends Algorithm> Parameter rate(String name, ToLongFunction<A> read) {
    return parameter(name, Role.RATE, read);
  }

  private static <A extends Algorithm> Parameter period(String name, ToLongFunction<A> read) {
    return parameter(name, Role.PERIOD, read);
  }

  private static <A extends Algorithm> Parameter burst(String name, ToLongFunction<A> read) {
    return parameter(name, Role.BURST, read);
  }

  /** A parameter read from its kind's record; only ever applied to an algorithm of that kind. */
  @SuppressWarnings("unchecked")
  private static <A extends Algorithm> Parameter parameter(String name, Role role, ToLongFunction<A> read) {
    return new Parameter(name, role, a -> read.applyAsLong((A) a));
  }
}

package dev.sluice.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import dev.sluice.KeyOverrides;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Reason;
import dev.sluice.internal.AdminCalls;
import dev.sluice.internal.Checks;
import dev.sluice.spi.ForwardingStoreRateLimiter;
import dev.sluice.spi.StoreRateLimiter;
import java.time.Duration;
import java.util.Optional;

/**
 * A {@link RateLimiter} whose state lives in a Hazelcast {@code IMap}: every decision, refund and peek
 * is one entry processor run on the partition owner of the budget's entry, which reads the state,
 * computes the reference step function ({@code dev.sluice.model.ReferenceModel}, the core's, on the
 * member) and writes the new state with its time to live, atomically under the entry's lock. One
 * network hop per decision (none when the calling member owns the entry).
 *
 * <pre>{@code
 * HazelcastInstance hz = Hazelcast.newHazelcastInstance(config);      // or HazelcastClient.newHazelcastClient(...)
 * HazelcastRateLimiter limiter = HazelcastRateLimiter.builder(Policy.tokenBucket("api", 100, 10, Duration.ofSeconds(1)), hz)
 *     .timeout(Duration.ofMillis(50))
 *     .build();
 * Decision d = limiter.tryAcquire("user:42");
 * }</pre>
 *
 * <ul>
 *   <li><b>Instance.</b> An embedded member or a client ({@code HazelcastClient}). The entry processor
 *       runs on the members, so with a client the members need Sluice's classes ({@code sluice-core}
 *       and {@code sluice-hazelcast}) on their class path ({@code docs/hazelcast.md}). Build the client
 *       with {@code setBackupAckToClientEnabled(false)}: otherwise a write whose backup member the
 *       client is not connected to waits out Hazelcast's backup timeout (5 s).
 *   <li><b>Keys.</b> The state of {@code key} under policy {@code p} is the entry
 *       {@code StoredId.key(p, key)} (a SHA-256 id, never the raw key or policy name) of the map
 *       {@link #DEFAULT_MAP} unless {@link Builder#map(String)} names another. The value is Sluice's
 *       own serializable class (Java serialization); a value of any other class is corrupt state.
 *   <li><b>Time.</b> By default the processor reads the owner member's clock, so the clocks of the
 *       callers never matter (a member's {@code Config.setUserContext} entry {@link #MEMBER_CLOCK},
 *       a {@code dev.sluice.Ticker}, replaces that clock, for tests). {@link Builder#ticker(dev.sluice.Ticker)}
 *       supplies the caller's clock instead; a reading that lags the clock's own earlier readings by
 *       more than {@link Builder#expiryGrace} is refused with {@link Reason#INVALID_CLOCK}, since a
 *       member may by then have expired a state that reading still counts.
 *   <li><b>Expiry.</b> Every write sets the entry's time to live, ending when neither the state
 *       ({@code ReferenceModel.expiresAt}) nor a ticket spent on it can matter, plus the grace.
 *   <li><b>Failure.</b> Every call has a deadline ({@link #DEFAULT_TIMEOUT} unless set): past it the
 *       decision follows the {@link dev.sluice.FailureMode} with {@link Reason#TIMEOUT}. A lost member's
 *       partitions move to their backups, and Hazelcast retries the invocations in flight on the new
 *       owner: decisions slow down for the migration, and an invocation the lost member had run may be
 *       run again (a charge counted twice: the strict side). See {@code docs/hazelcast.md} for what a
 *       crash can cost.
 *   <li><b>Algorithms.</b> Fixed window, sliding window, token bucket and GCRA (a fixed-size state per
 *       key); not the exact sliding log.
 * </ul>
 * Thread-safe. Closing the limiter never shuts the instance down: it is the caller's.
 */
public final class HazelcastRateLimiter extends ForwardingStoreRateLimiter implements KeyOverrides {
  /** Deadline of every call unless {@link Builder#timeout(Duration)} says otherwise: 100 ms. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(100);

  /** The map budgets are kept in unless {@link Builder#map(String)} names another. */
  public static final String DEFAULT_MAP = "sluice";

  /**
   * How much longer than its state can matter an entry lives, unless {@link Builder#expiryGrace} says
   * otherwise: 1 s, for members whose clocks disagree (an entry's time to live is counted on the
   * member that holds it) and, on a supplied clock, callers whose clocks disagree.
   */
  public static final Duration DEFAULT_EXPIRY_GRACE = Duration.ofSeconds(1);

  /**
   * The key of a member's user context ({@code Config.setUserContext}) under which a
   * {@code dev.sluice.Ticker} replaces the member's clock for Sluice's processors; absent, the
   * member's system clock.
   */
  public static final String MEMBER_CLOCK = "dev.sluice.hazelcast.clock";

  private final HazelcastBackend backend;
  private final long timeoutNanos;
  /** The supplied clock, which administrative steps read as decisions do; null: the members' clocks. */
  private final dev.sluice.Ticker supplied;

  private HazelcastRateLimiter(StoreRateLimiter limiter, HazelcastBackend backend, Duration timeout, dev.sluice.Ticker supplied) {
    super(limiter);
    this.backend = backend;
    this.timeoutNanos = timeout.toNanos();
    this.supplied = supplied;
  }

  /** The reading an administrative step runs at: the supplied clock's, or 0 (the owner member's clock). */
  private long now() {
    return supplied == null ? 0 : supplied.nowMicros();
  }

  /**
   * Pins {@code policy} as {@code key}'s configuration under its name ({@link KeyOverrides#override}).
   *
   * <p>On Hazelcast the override is kept in the budget's entry, beside its state, and read by the
   * same entry processor that decides (one hop per decision still); an entry with an override never
   * expires, and {@link #reset} keeps it (the count goes).
   *
   * @throws dev.sluice.spi.StoreException when the members do not answer within the timeout, or fail
   */
  @Override public void override(String key, Policy policy) {
    Checks.key(key);
    HazelcastBackend.CAPABILITIES.require(Checks.notNull("policy", policy));
    AdminCalls.run("Hazelcast: override of a key",
        () -> backend.override(BudgetStep.SET_OVERRIDE, policy, key, policy, now(), System.nanoTime() + timeoutNanos));
  }

  @Override public boolean clearOverride(String key, Policy policy) {
    Checks.key(key);
    Checks.notNull("policy", policy);
    long[] r = AdminCalls.run("Hazelcast: clearing a key's override",
        () -> backend.override(BudgetStep.CLEAR_OVERRIDE, policy, key, null, now(), System.nanoTime() + timeoutNanos));
    return r != null && r.length == 1 && r[0] == 1;
  }

  @Override public Optional<Policy> overrideOf(String key, Policy policy) {
    Checks.key(key);
    Checks.notNull("policy", policy);
    long[] r = AdminCalls.run("Hazelcast: reading a key's override",
        () -> backend.override(BudgetStep.GET_OVERRIDE, policy, key, null, now(), System.nanoTime() + timeoutNanos));
    return r == null || r.length == 0 ? Optional.empty() : Optional.of(HazelcastBackend.overridden(policy, r, 0));
  }

  /** A limiter on {@code hazelcast}, an embedded member or a client, which it never shuts down. */
  public static Builder builder(Policy policy, HazelcastInstance hazelcast) {
    return new Builder(policy, Checks.notNull("hazelcast", hazelcast));
  }

  /**
   * Settings of a {@link HazelcastRateLimiter}: those of every store-backed limiter
   * ({@link StoreRateLimiter.Settings}: {@code timeout}, default {@link #DEFAULT_TIMEOUT};
   * {@code failureMode}; {@code ticker}, default the owner member's clock; {@code listener};
   * {@code issuer}; {@code maxBatch}), the map and {@link #expiryGrace}. Fails fast on bad values.
   */
  public static final class Builder extends StoreRateLimiter.Settings<Builder> {
    private final HazelcastInstance hazelcast;
    private String map = DEFAULT_MAP;
    private Duration expiryGrace = DEFAULT_EXPIRY_GRACE;

    private Builder(Policy policy, HazelcastInstance hazelcast) {
      super(policy, DEFAULT_TIMEOUT);
      this.hazelcast = hazelcast;
    }

    @Override protected Builder self() {
      return this;
    }

    /** The map budgets are kept in (default {@link #DEFAULT_MAP}); limiters that share budgets name the same map. */
    public Builder map(String name) {
      Checks.notNull("map", name);
      if (name.isBlank()) {
        throw new IllegalArgumentException("map name is blank; name the IMap budgets are kept in, e.g. \"" + DEFAULT_MAP + "\"");
      }
      this.map = name;
      return this;
    }

    /**
     * How much longer than its state can matter an entry lives (default {@link #DEFAULT_EXPIRY_GRACE};
     * on a supplied ticker the entry lives the timeout longer still). Only memory is traded: a state
     * past its expiry decides exactly like an absent one. On a supplied ticker it is also how far the
     * ticker may fall behind its own earlier readings before its readings are refused with
     * {@link Reason#INVALID_CLOCK} (the members expire entries on their own clocks); a test suite on a
     * manual ticker sets a grace longer than its wall time.
     */
    public Builder expiryGrace(Duration grace) {
      Checks.notNull("expiryGrace", grace);
      if (grace.isNegative()) {
        throw new IllegalArgumentException("expiryGrace " + grace + " is negative; use Duration.ZERO or more");
      }
      this.expiryGrace = grace;
      return this;
    }

    /** Builds the limiter; nothing is sent to the cluster until the first decision. */
    public HazelcastRateLimiter build() {
      boolean supplied = suppliedTicker() != null;
      String description = "HazelcastRateLimiter[policy=" + policy.name() + ", algorithm=" + policy.algorithm().id()
          + ", map=" + map + ", timeout=" + timeout() + ", clock=" + (supplied ? "supplied" : "member") + "]";
      HazelcastBackend backend = new HazelcastBackend(hazelcast.getMap(map), expiryGrace, supplied, timeout().toNanos(),
          description);
      return new HazelcastRateLimiter(pipeline(backend), backend, timeout(), suppliedTicker());
    }
  }

  /** The entry that holds {@code key}'s budget under {@code policy}: its name and the key, nothing else. */
  static String storedKey(Policy policy, String key) {
    return dev.sluice.internal.StoredId.key(policy.name(), key);
  }
}

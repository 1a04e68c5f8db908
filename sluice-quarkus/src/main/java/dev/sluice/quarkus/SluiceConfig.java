package dev.sluice.quarkus;

import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.util.List;
import java.util.Optional;

/**
 * Everything under {@code sluice.*}, in the shape of the Spring starter's {@code sluice.*} and the
 * service's policy file. Every value is read as the text it was written in and handed to the
 * kernel's one parser of it ({@code PolicyWords}, {@code FailureModeWords}, {@code HeaderFamily}),
 * so the extension accepts what the service and the starter accept and refuses the same mistakes
 * with the same messages.
 */
@ConfigMapping(prefix = "sluice")
@ConfigRoot(phase = ConfigPhase.RUN_TIME)
public interface SluiceConfig {
  /** Where budgets are kept: {@code memory} (in this process, the default), {@code redis} or {@code postgres}. */
  @WithDefault("memory")
  String store();

  /**
   * What a failed store call decides (redis, postgres): {@code closed} (refuse, a 503 over HTTP),
   * {@code open} (allow, and log a warning) or {@code fallback} (an in-process limiter of the same
   * policy until the store answers again); any case.
   */
  @WithDefault("closed")
  String failureMode();

  /** Deadline of one store call (redis, postgres), such as {@code 100ms}; unset keeps the store's default. */
  Optional<String> timeout();

  /** Most keys one policy's memory limiter tracks (the memory store, and the fallback's). */
  @WithDefault("10000")
  int maxKeys();

  /** {@code sluice.redis.*}. */
  Redis redis();

  /** {@code sluice.postgres.*}. */
  Postgres postgres();

  /** The policies, entries of the service's policy-file shape. */
  List<PolicyEntry> policies();

  /** {@code sluice.http.*}: the HTTP rules. */
  Http http();

  /** {@code sluice.redis.*}. */
  interface Redis {
    /** A {@code redis://} URI (Lettuce's syntax: {@code redis://:password@host:6379/0}). */
    @WithDefault("redis://127.0.0.1:6379")
    String url();
  }

  /** {@code sluice.postgres.*}: needs {@code sluice-jdbc}, HikariCP and the PostgreSQL driver on the class path. */
  interface Postgres {
    /** A {@code jdbc:postgresql://} URL. */
    Optional<String> url();

    /** The table budgets are kept in (created if absent). */
    @WithDefault("sluice_rate_limits")
    String table();
  }

  /**
   * One entry of {@code sluice.policies}: the fields of the service's policy file. Only carried here;
   * what an entry means (which parameters an algorithm takes, durations, bounds) is {@code PolicyWords}'s.
   */
  interface PolicyEntry {
    /** The policy's name: part of every key's identity. */
    Optional<String> name();

    /** {@code fixed-window}, {@code sliding-window}, {@code sliding-log}, {@code token-bucket} or {@code gcra}. */
    Optional<String> algorithm();

    /** Permits per window (fixed-window, sliding-window, sliding-log). */
    Optional<String> limit();

    /** The window, such as {@code 1m} or {@code 500ms} (fixed-window, sliding-window, sliding-log). */
    Optional<String> window();

    /** The bucket's size (token-bucket). */
    Optional<String> capacity();

    /** Tokens added every refill-period (token-bucket). */
    Optional<String> refillTokens();

    /** How often refill-tokens are added, such as {@code 1s} (token-bucket). */
    Optional<String> refillPeriod();

    /** Permits per period (gcra). */
    Optional<String> rate();

    /** The period of rate, such as {@code 1s} (gcra). */
    Optional<String> period();

    /** The largest burst (gcra). */
    Optional<String> burst();
  }

  /** {@code sluice.http.*}. */
  interface Http {
    /** Install the route filter when there are rules. */
    @WithDefault("true")
    boolean enabled();

    /** Proxies (CIDR blocks) whose {@code X-Forwarded-For} is believed by the key {@code remoteAddress}. */
    Optional<List<String>> trustedProxies();

    /** The rules; the first that matches a request charges it, requests no rule matches pass. */
    List<Rule> rules();
  }

  /** One HTTP rule. */
  interface Rule {
    /**
     * Path patterns: {@code /api/**} (the path and everything under it), {@code /users/*} (one
     * segment), or an exact path; none matches every path.
     */
    Optional<List<String>> patterns();

    /** HTTP methods (GET, POST, ...); none matches every method. */
    Optional<List<String>> methods();

    /** The policy requests are charged to (a name from {@code sluice.policies}). */
    Optional<String> policy();

    /** The key: {@code remoteAddress} (through trusted-proxies) or {@code header:NAME}. */
    @WithDefault("remoteAddress")
    String key();

    /** Permits per request. */
    @WithDefault("1")
    long permits();

    /** Give the permits back when the handler answers below 400 (only failures count: a login form). */
    @WithDefault("false")
    boolean skipOnSuccess();

    /** Give the permits back when the handler fails or answers 5xx (a failed request does not count). */
    @WithDefault("false")
    boolean skipOnFailure();

    /**
     * Which limit header families to send: {@code ietf}, {@code legacy}, {@code all}, {@code none}
     * (a list is their union); {@code Retry-After} is always sent on a refusal.
     */
    @WithDefault("ietf,legacy")
    List<String> headers();
  }
}

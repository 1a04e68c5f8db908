package dev.sluice.quarkus;

import dev.sluice.FailureMode;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.kernel.FailureModeWords;
import dev.sluice.kernel.PolicyTable;
import dev.sluice.kernel.PolicyWords;
import dev.sluice.kernel.Readiness;
import dev.sluice.kernel.Store;
import dev.sluice.kernel.StoreFactory;
import dev.sluice.kernel.StoreOptions;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.spi.Bean;
import jakarta.enterprise.inject.spi.BeanManager;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * The application Sluice is to a Quarkus service, built once at start from {@link SluiceConfig}: the
 * store (the kernel's {@link StoreFactory}), the policies in force with their limiters (the kernel's
 * {@link PolicyTable}), the HTTP rules, and the store's {@link Readiness}. A mistake in any of them
 * stops the application at start with a message naming the property, the value and the rule.
 *
 * <p>The store is the one {@code sluice.store} names, unless the application has a {@link Store} bean,
 * which replaces it (a store of its own making; the application closes it).
 *
 * <p>The clock is the system's, unless the application has a {@link Ticker} bean (a test's frozen
 * clock): the memory store decides on it and every verdict is rendered against it. Every limiter
 * reports to the application's {@link RateLimitListener} bean when it has one (sluice-micrometer's
 * {@code RateLimitMetrics}, for meters).
 */
@Singleton
public class Sluice {
  private static final System.Logger LOG = System.getLogger(Sluice.class.getName());

  private final Store store;
  /** False when the store is the application's {@link Store} bean: the application closes it, not Sluice. */
  private final boolean ownsStore;
  private final PolicyTable<Void> table;
  private final HttpRules rules;
  private final Readiness readiness;
  private final Ticker ticker;

  @Inject
  Sluice(SluiceConfig config, Instance<Ticker> tickers, Instance<RateLimitListener> listeners, Instance<Store> stores) {
    this.ticker = tickers.isResolvable() ? tickers.get() : Ticker.system();
    RateLimitListener listener = listener(listeners);
    List<Policy> policies = policies(config.policies());
    Function<Policy, FailureMode> failureModes = FailureModeWords.parse("sluice.failure-mode", config.failureMode(),
        (p, reason, cause) -> LOG.log(System.Logger.Level.WARNING, "rate-limit store failed for policy '" + p.name()
            + "' (" + reason + "); allowing under sluice.failure-mode=open", cause), config.maxKeys());
    // The application's Store bean replaces sluice.store (as the Spring starter's does); sluice.failure-mode is
    // still read above, so that a setting is never accepted unread.
    this.ownsStore = !stores.isResolvable();
    this.store = ownsStore ? open(config, failureModes, ticker) : stores.get();
    try {
      this.table = new PolicyTable<>(store, policies, p -> null, a -> listener);
      this.rules = new HttpRules(config.http(), this::limiter, ticker);
    } catch (RuntimeException e) {
      if (ownsStore) {
        store.close();
      }
      throw e;
    }
    this.readiness = new Readiness(store, Duration.ofSeconds(1).toNanos(), System::nanoTime);
    LOG.log(System.Logger.Level.INFO, "Sluice: " + policies.size() + " polic" + (policies.size() == 1 ? "y" : "ies")
        + " on " + store.describe() + ", " + rules.size() + " HTTP rule(s)");
  }

  /**
   * Every {@link RateLimitListener} bean of the application, and the extension's meters when it
   * registers them ({@link SluiceMeters}): none is {@link RateLimitListener#NONE}, one is itself,
   * several are told in turn, each guarded
   * ({@link RateLimitListener#guarded}).
   */
  private static RateLimitListener listener(Instance<RateLimitListener> beans) {
    List<RateLimitListener> all = new ArrayList<>();
    for (RateLimitListener l : beans) {
      all.add(l);
    }
    return RateLimitListener.all(all, true); // one that throws is logged, and the others are still told
  }

  /**
   * Builds the application as the container starts, so that bad configuration fails the start, and
   * checks every {@link RateLimited} on a bean: a misspelt policy, a key naming no parameter or a
   * permits below 1 stops the start instead of failing the first call.
   */
  void onStart(@Observes StartupEvent event, BeanManager beans) {
    readiness.probe();
    for (Bean<?> bean : beans.getBeans(Object.class, Any.Literal.INSTANCE)) {
      Class<?> c = bean.getBeanClass();
      if (c.getName().startsWith("io.quarkus.") || c.getName().startsWith("io.smallrye.")) {
        continue;
      }
      RateLimited onClass = c.getAnnotation(RateLimited.class);
      for (Method m : c.getDeclaredMethods()) {
        RateLimited a = m.getAnnotation(RateLimited.class);
        if (a == null && onClass != null && !Modifier.isPrivate(m.getModifiers()) && !Modifier.isStatic(m.getModifiers())
            && !m.isSynthetic()) {
          a = onClass;
        }
        if (a != null) {
          RateLimitedInterceptor.plan(this, m, a);
        }
      }
    }
  }

  /**
   * The policies of {@code sluice.policies}, through the kernel's one parser: each entry handed as the
   * map of the fields it set, under the policy file's names.
   */
  static List<Policy> policies(List<SluiceConfig.PolicyEntry> entries) {
    List<Map<String, Object>> maps = new ArrayList<>();
    for (SluiceConfig.PolicyEntry e : entries) {
      Map<String, Object> m = new LinkedHashMap<>();
      put(m, "name", e.name(), false);
      put(m, "algorithm", e.algorithm(), false);
      put(m, "limit", e.limit(), true);
      put(m, "window", e.window(), true);
      put(m, "capacity", e.capacity(), true);
      put(m, "refill-tokens", e.refillTokens(), true);
      put(m, "refill-period", e.refillPeriod(), true);
      put(m, "rate", e.rate(), true);
      put(m, "period", e.period(), true);
      put(m, "burst", e.burst(), true);
      maps.add(m);
    }
    return PolicyWords.policies(maps, "sluice.policies");
  }

  /**
   * A field as the policy file's YAML would have read it: digits are the number they are (so that
   * {@code window: 60} is refused as "without a unit", as the service refuses it), anything else the
   * text as written (so that {@code limit: five} is refused as not a whole number).
   */
  private static void put(Map<String, Object> m, String field, Optional<String> value, boolean numeric) {
    if (value.isEmpty()) {
      return;
    }
    String v = value.get().strip();
    if (numeric && !v.isEmpty() && v.length() <= 18 && v.chars().allMatch(c -> c >= '0' && c <= '9')) {
      m.put(field, Long.parseLong(v));
    } else {
      m.put(field, v);
    }
  }

  private static Store open(SluiceConfig config, Function<Policy, FailureMode> failureModes, Ticker ticker) {
    StoreFactory factory;
    try {
      factory = StoreFactory.named(config.store());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("sluice.store: " + e.getMessage(), e);
    }
    StoreOptions options = StoreOptions.defaults().withFailureModes(failureModes)
        .withMemory(config.maxKeys(), StoreOptions.defaults().maxKeyLength(), ticker);
    if (config.timeout().isPresent()) {
      options = options.withTimeout(PolicyWords.duration("sluice.timeout", config.timeout().get()));
    }
    String setting = "sluice.store=" + config.store();
    switch (factory.name()) {
      case "redis" -> {
        options = options.withUrl(config.redis().url());
        setting = "sluice.redis.url '" + Store.redact(config.redis().url()) + "'";
      }
      case "postgres" -> {
        String url = config.postgres().url().orElseThrow(() -> new IllegalArgumentException(
            "sluice.store=postgres needs sluice.postgres.url (jdbc:postgresql://host:5432/db?user=...&password=...)"));
        options = options.withUrl(url).withTable(config.postgres().table(), options.sweepInterval());
        setting = "sluice.postgres.url '" + Store.redact(url) + "'";
        if (url.startsWith("jdbc:postgresql:")) { // any other URL is refused, with its rule, by the store
          registerPostgresDriver(setting);
        }
      }
      default -> { }
    }
    try {
      return factory.open(options);
    } catch (NoClassDefFoundError e) {
      throw new IllegalStateException(setting + ": the store's client is not on the class path (" + e.getMessage()
          + "); sluice.store=postgres needs dev.sluice:sluice-jdbc, com.zaxxer:HikariCP and org.postgresql:postgresql", e);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(setting + ": " + e.getMessage(), e);
    }
  }

  /**
   * Loads the PostgreSQL driver through the application's class loader, which registers it with
   * {@code DriverManager}. {@code DriverManager} finds drivers on the system class loader only, and
   * Quarkus loads the application's dependencies through its own: without this, HikariCP's
   * {@code DriverManager.getDriver} answers "No suitable driver" and the store cannot open.
   */
  private static void registerPostgresDriver(String setting) {
    try {
      Class.forName("org.postgresql.Driver", true, Sluice.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(setting + ": the PostgreSQL driver (org.postgresql.Driver) is not on the class path;"
          + " sluice.store=postgres needs dev.sluice:sluice-jdbc, com.zaxxer:HikariCP and org.postgresql:postgresql", e);
    }
  }

  /** The limiter of policy {@code name}; a name {@code sluice.policies} lacks is refused with the names it has. */
  public RateLimiter limiter(String name) {
    PolicyTable.Entry<Void> e = table.entry(name);
    if (e == null) {
      throw new IllegalArgumentException("policy " + (name == null ? "null" : "'" + name + "'")
          + " is not one of sluice.policies " + table.entries().keySet());
    }
    return e.limiter();
  }

  /** The policies in force, in their order. */
  public List<Policy> policies() {
    return table.policies();
  }

  /** The clock the memory store decides on and verdicts are rendered against. */
  public Ticker ticker() {
    return ticker;
  }

  /** The store every limiter uses. */
  public Store store() {
    return store;
  }

  /** The store's readiness, probed at most once a second. */
  public Readiness readiness() {
    return readiness;
  }

  HttpRules rules() {
    return rules;
  }

  @PreDestroy
  void close() {
    if (ownsStore) {
      store.close();
    }
  }
}

package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Decision;
import dev.sluice.FailureMode;
import dev.sluice.Path;
import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.Reason;
import dev.sluice.Ticker;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The module surface, the builder's validation, and behaviour that needs no server at all. */
class PostgresModuleAndBuilderTest {
  static final Policy P = Policy.fixedWindow("api", 10, Duration.ofSeconds(1));
  /** Nothing listens on port 1: every connection attempt fails at once. */
  static final PostgresUnpooledDataSource NOWHERE = new PostgresUnpooledDataSource("jdbc:postgresql://127.0.0.1:1/x?connectTimeout=1");

  @Test
  void exportsOnlyTheApiPackageAndRequiresOnlyTheCoreAndJavaSql() throws Exception {
    ModuleDescriptor d;
    try (InputStream in = Files.newInputStream(java.nio.file.Path.of("target/classes/module-info.class"))) {
      d = ModuleDescriptor.read(in);
    }
    Set<String> exports = new TreeSet<>();
    d.exports().forEach(e -> exports.add(e.source() + (e.isQualified() ? " to " + e.targets() : "")));
    assertThat(d.name()).isEqualTo("dev.sluice.jdbc");
    assertThat(exports).contains("dev.sluice.jdbc").isSubsetOf("dev.sluice.jdbc", "dev.sluice.jdbc.store");
    Set<String> requires = new TreeSet<>();
    d.requires().forEach(r -> requires.add(r.name()));
    assertThat(requires).containsExactlyInAnyOrder("java.base", "java.sql", "dev.sluice.core");
    String pom = Files.readString(java.nio.file.Path.of("pom.xml"));
    Matcher m = Pattern.compile("<dependency>(.*?)</dependency>", Pattern.DOTALL).matcher(pom);
    while (m.find()) {
      if (!m.group(1).contains("<artifactId>sluice-core</artifactId>")) {
        assertThat(m.group(1)).as("only the core at runtime").contains("<scope>test</scope>");
      }
    }
  }

  @Test
  void theBuilderFailsFastWithMessagesThatNameTheValue() {
    assertThatThrownBy(() -> JdbcRateLimiter.builder(Policy.slidingLog("log", 10, Duration.ofSeconds(1)), NOWHERE))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("policy 'log' uses sliding-log, whose state grows with its limit; PostgreSQL keeps a fixed-size "
            + "state per key and runs fixed-window, sliding-window, token-bucket and gcra: use one of those, or sliding-log "
            + "on MemoryRateLimiter or Redis");
    assertThatThrownBy(() -> JdbcRateLimiter.builder(P, null)).hasMessage("dataSource is null");
    assertThatThrownBy(() -> JdbcRateLimiter.builder(P, NOWHERE).timeout(Duration.ofNanos(999_999)))
        .hasMessage("timeout PT0.000999999S is outside 1 ms..1 min; every decision needs a deadline a caller can wait for");
    assertThatThrownBy(() -> JdbcRateLimiter.builder(P, NOWHERE).table("rate limits; DROP TABLE x"))
        .hasMessage("table \"rate limits; DROP TABLE x\" is not a plain SQL identifier; use letters, digits and '_'"
            + " (optionally schema.table), at most 63 each");
    assertThat(JdbcRateLimiter.builder(P, NOWHERE).table("app.sluice_limits").build().table()).isEqualTo("app.sluice_limits");
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(P, NOWHERE).build()) {
      assertThatThrownBy(() -> l.tryAcquire("k", 1, Policy.slidingLog("log", 10, Duration.ofSeconds(1))))
          .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("policy 'log' uses sliding-log, whose state grows");
      assertThatThrownBy(() -> l.tryAcquire(" ")).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> l.tryAcquire("k", 11)).hasMessageContaining("permits 11 exceeds 10");
    }
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(P, NOWHERE).tenant(() -> " ").build()) {
      assertThatThrownBy(() -> l.tryAcquire("k")).isInstanceOf(IllegalArgumentException.class)
          .hasMessage("tenant \" \" is blank; tenant mode needs the current tenant from the supplier given to tenant(...)");
    }
  }

  @Test
  void anUnreachableStoreAndAnInvalidClockBecomeDecisionsAndTheListenerSeesThemWithoutKeys() throws Exception {
    List<String> events = new CopyOnWriteArrayList<>();
    RateLimitListener listener = new RateLimitListener() {
      @Override public void onDecision(Decision d, String key) {
        events.add("decision " + d.reason() + " key=" + key);
      }

      @Override public void onStoreCall(Policy p, long nanos, Throwable error) {
        events.add("store " + (error == null ? "ok" : "error"));
        throw new IllegalStateException("a throwing listener never breaks a decision");
      }
    };
    try (JdbcRateLimiter l = JdbcRateLimiter.builder(P, NOWHERE).listener(listener, false).build()) {
      Decision d = l.tryAcquire("user:1");
      assertThat(d.allowed()).isFalse();
      assertThat(d.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(d.path()).isEqualTo(Path.FAILURE_MODE);
      assertThat(d.retryAfter()).isEqualTo(Duration.ofSeconds(1));
      Decision async = l.tryAcquireAsync("user:1", 1).toCompletableFuture().get();
      assertThat(async.reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
      assertThat(l.peek("user:1").reason()).isEqualTo(Reason.STORE_UNAVAILABLE);
    }
    assertThat(events).contains("store error", "decision STORE_UNAVAILABLE key=null");

    try (JdbcRateLimiter l = JdbcRateLimiter.builder(P, NOWHERE).ticker(() -> 0)
        .failureMode(FailureMode.open((p, r, e) -> { })).build()) {
      Decision d = l.tryAcquire("user:1");
      assertThat(d.reason()).as("an invalid clock fails closed even in open mode").isEqualTo(Reason.INVALID_CLOCK);
      assertThat(d.allowed()).isFalse();
    }
  }
}

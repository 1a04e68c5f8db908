package dev.sluice.spring;

import dev.sluice.guard.RateLimitExceededException;
import java.util.concurrent.atomic.LongAdder;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/**
 * The application the tests start: the same controllers serve Spring MVC and WebFlux (on Reactor
 * Netty: {@code ReactiveServer}, one file per Spring Boot line).
 */
@SpringBootApplication
public class TestApp {
  /** Endpoints behind the HTTP rules and the annotations. */
  @RestController
  static class Api {
    private final Greeter greeter;

    Api(Greeter greeter) {
      this.greeter = greeter;
    }

    @GetMapping("/api/hello")
    String hello() {
      return "hello";
    }

    @GetMapping("/load")
    String load() {
      return "load";
    }

    @GetMapping("/bulk")
    String bulk() {
      return "bulk";
    }

    @GetMapping("/thread")
    String thread() {
      return Thread.currentThread().getName();
    }

    /** What {@code HttpRuleFeaturesTest}'s rules charge: answers {@code status} (200 by default). */
    @org.springframework.web.bind.annotation.RequestMapping("/feature/**")
    ResponseEntity<String> feature(@RequestParam(defaultValue = "200") int status) {
      return ResponseEntity.status(status).body("feature");
    }

    /** {@code RateLimitedAsyncTest}: a CompletionStage and a Flux under the annotation. */
    @GetMapping("/stage/{user}")
    java.util.concurrent.CompletableFuture<String> stage(@PathVariable String user) {
      return greeter.greetStage(user);
    }

    @GetMapping("/flux/{user}")
    reactor.core.publisher.Flux<String> flux(@PathVariable String user) {
      return greeter.greetMany(user);
    }

    @GetMapping("/open")
    String open() {
      return "no rule matches";
    }

    @PostMapping("/login")
    ResponseEntity<String> login(@RequestParam boolean ok) {
      return ok ? ResponseEntity.ok("in") : ResponseEntity.status(401).body("no");
    }

    @GetMapping("/greet/{user}")
    String greet(@PathVariable String user) {
      return greeter.greet(user);
    }

    @GetMapping("/greet-or-busy/{user}")
    String greetOrBusy(@PathVariable String user) {
      return greeter.greetOrBusy(user);
    }

    @GetMapping("/pair/{user}")
    String pair(@PathVariable String user) {
      greeter.both(user);
      return "ok";
    }

    @GetMapping("/reactive/{user}")
    Mono<String> reactive(@PathVariable String user) {
      return greeter.greetLater(user);
    }

    @GetMapping("/reactive-or-busy/{user}")
    Mono<String> reactiveOrBusy(@PathVariable String user) {
      return greeter.greetLaterOrBusy(user);
    }

    @GetMapping("/complete/{tenant}")
    String complete(@PathVariable String tenant, @RequestParam long max, @RequestParam long used) {
      return Long.toString(greeter.complete(tenant, max, used).tokens());
    }

    @GetMapping("/complete-later/{tenant}")
    Mono<String> completeLater(@PathVariable String tenant, @RequestParam long max, @RequestParam long used) {
      return greeter.completeLater(tenant, max, used).map(u -> Long.toString(u.tokens()));
    }

    /** What {@code KeySourcesTest}'s rules charge. */
    @GetMapping("/keys/{source}")
    String keys(@PathVariable String source) {
      return "ok";
    }

    /** No rule's: charged by the annotation alone, keyed by the header's value. */
    @GetMapping("/annotated")
    String annotated(@RequestHeader("X-Api-Key") String apiKey) {
      return greeter.byApiKey(apiKey);
    }

    /** Blocks on purpose: the WebFlux test's proof that its blocking detector sees a blocking call. */
    @GetMapping("/sleep")
    String sleep() throws InterruptedException {
      Thread.sleep(1);
      return "slept";
    }
  }

  /** Methods under {@link RateLimited}. */
  @Service
  public static class Greeter {
    private final LongAdder bothRan = new LongAdder();

    /** Calls of {@link #both} that ran. */
    public long bothRan() {
      return bothRan.sum();
    }

    @RateLimited(policy = "per-user", key = "'user:' + #user")
    public String greet(String user) {
      return "hello " + user;
    }

    @RateLimited(policy = "per-user", key = "'busy:' + #p0", fallbackMethod = "busy")
    public String greetOrBusy(String user) {
      return "hello " + user;
    }

    String busy(String user, RateLimitExceededException refused) {
      return "busy " + user + " (" + refused.policyName() + ", retry in " + refused.retryAfterSeconds() + " s)";
    }

    @RateLimited(policy = "pair-user", key = "#user")
    @RateLimited(policy = "pair-all", key = "@keys.pairKey()", permits = "1")
    public void both(String user) {
      bothRan.increment();
    }

    /** {@code KeySourcesTest}'s annotation: keyed by a header's value, on the policy of a rule keyed by address. */
    @RateLimited(policy = "api", key = "#apiKey")
    public String byApiKey(String apiKey) {
      return "ok";
    }

    @RateLimited(policy = "per-user", key = "'later:' + #user")
    public Mono<String> greetLater(String user) {
      return Mono.just("hello later " + user);
    }

    @RateLimited(policy = "per-user", key = "'later-busy:' + #user", fallbackMethod = "busyLater")
    public Mono<String> greetLaterOrBusy(String user) {
      return Mono.just("hello later " + user);
    }

    Mono<String> busyLater(String user, RateLimitExceededException refused) {
      return Mono.just("busy later " + user + " (" + refused.policyName() + ")");
    }

    /** Waits for its permit up to 5 s (one call per 200 ms). */
    @RateLimited(policy = "paced", key = "#user", timeout = "5s")
    public String patient(String user) {
      return "patient " + user;
    }

    /** Waits 10 ms at most: the second call within 200 ms is refused at once. */
    @RateLimited(policy = "paced", key = "#user", timeout = "10ms")
    public String impatient(String user) {
      return "impatient " + user;
    }

    @RateLimited(policy = "paced", key = "#user", timeout = "5s")
    public Mono<String> patientLater(String user) {
      return Mono.just("patient later " + user);
    }

    @RateLimited(policy = "per-user", key = "'stage:' + #user")
    public java.util.concurrent.CompletableFuture<String> greetStage(String user) {
      return java.util.concurrent.CompletableFuture.supplyAsync(() -> "hello stage " + user);
    }

    @RateLimited(policy = "per-user", key = "'stage-busy:' + #user", fallbackMethod = "busyStage")
    public java.util.concurrent.CompletionStage<String> greetStageOrBusy(String user) {
      return java.util.concurrent.CompletableFuture.completedFuture("hello stage " + user);
    }

    java.util.concurrent.CompletionStage<String> busyStage(String user, RateLimitExceededException refused) {
      return java.util.concurrent.CompletableFuture.completedFuture("busy stage " + user);
    }

    @RateLimited(policy = "per-user", key = "'flux:' + #user")
    public reactor.core.publisher.Flux<String> greetMany(String user) {
      return reactor.core.publisher.Flux.just("hello", user);
    }

    /** An LLM call's shape: reserve the most it may cost, settle what it used. */
    @RateLimited(policy = "tokens", key = "#tenant", permits = "#max", cost = "#result.tokens")
    public Usage complete(String tenant, long max, long used) {
      return new Usage(used);
    }

    @RateLimited(policy = "tokens", key = "#tenant", permits = "#max", cost = "#result.tokens")
    public Mono<Usage> completeLater(String tenant, long max, long used) {
      return Mono.just(new Usage(used));
    }

    /** Two limits, calls and tokens: only the tokens leg has a cost. */
    @RateLimited(policy = "token-calls", key = "#tenant")
    @RateLimited(policy = "tokens", key = "#tenant", permits = "#max", cost = "#result.tokens")
    public Usage completeTwice(String tenant, long max, long used) {
      return new Usage(used);
    }

    /** A cost expression that fails on every call (no such property). */
    @RateLimited(policy = "tokens", key = "#tenant", permits = "#max", cost = "#result.missing")
    public Usage completeBadCost(String tenant, long max, long used) {
      return new Usage(used);
    }
  }

  /** What a costed call returns. */
  public record Usage(long tokens) {}

  /** A Mono method whose fallback returns the wrong type. */
  @Service
  public static class Miswired {
    @RateLimited(policy = "per-user", key = "'miswired:' + #user", fallbackMethod = "plain")
    public Mono<String> later(String user) {
      return Mono.just(user);
    }

    String plain(String user, RateLimitExceededException refused) {
      return "busy";
    }
  }

  /**
   * A WebFlux filter after Sluice's that, when asked by {@code X-Commit-Probe}, names in
   * {@code X-Commit-Thread} the thread its own commit action ran on: the thread the commit goes on
   * on once Sluice's refund is done. Ignored by the servlet applications.
   */
  @org.springframework.stereotype.Component
  public static class CommitProbe implements org.springframework.web.server.WebFilter, org.springframework.core.Ordered {
    @Override public Mono<Void> filter(org.springframework.web.server.ServerWebExchange exchange,
                                       org.springframework.web.server.WebFilterChain chain) {
      if (exchange.getRequest().getHeaders().getFirst("X-Commit-Probe") != null) {
        var response = exchange.getResponse();
        response.beforeCommit(() -> Mono.fromRunnable(
            () -> response.getHeaders().set("X-Commit-Thread", Thread.currentThread().getName())));
      }
      return chain.filter(exchange);
    }

    @Override public int getOrder() {
      return SluiceWebFilter.ORDER + 1;
    }
  }

  /** An application's RateLimitListener bean (Resilience4j's event consumer): the starter tells it every refusal. */
  @org.springframework.stereotype.Component
  public static class HeardRefusals implements dev.sluice.RateLimitListener {
    final java.util.List<String> keys = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override public void onRefusal(dev.sluice.Decision decision, String key) {
      keys.add(decision.policy().name() + " " + key);
    }
  }

  /** A listener bean that throws (at its first refusal, to keep the logs short): the starter logs it, and the others are still told. */
  @org.springframework.stereotype.Component
  public static class ThrowingListener implements dev.sluice.RateLimitListener {
    private final java.util.concurrent.atomic.AtomicBoolean thrown = new java.util.concurrent.atomic.AtomicBoolean();

    @Override public void onRefusal(dev.sluice.Decision decision, String key) {
      if (thrown.compareAndSet(false, true)) {
        throw new IllegalStateException("a listener that fails (expected by the tests)");
      }
    }
  }

  /** A bean a key expression calls. */
  @Service("keys")
  public static class Keys {
    /** The one key of the shared pair leg. */
    public String pairKey() {
      return "everyone";
    }

    /** A value computed from a request's: {@code value} in lower case, or null. */
    public String lower(String value) {
      return value == null ? null : value.toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * The tests' authentication, for the servlet applications: {@code X-Test-User} names the
   * request's principal (so that a test can act as a user who chose a name). Before Sluice's filter.
   */
  @org.springframework.stereotype.Component
  public static class TestAuthentication implements jakarta.servlet.Filter, org.springframework.core.Ordered {
    @Override public void doFilter(jakarta.servlet.ServletRequest req, jakarta.servlet.ServletResponse resp,
                                   jakarta.servlet.FilterChain chain) throws java.io.IOException, jakarta.servlet.ServletException {
      jakarta.servlet.http.HttpServletRequest http = (jakarta.servlet.http.HttpServletRequest) req;
      String user = http.getHeader("X-Test-User");
      chain.doFilter(user == null ? req : new jakarta.servlet.http.HttpServletRequestWrapper(http) {
        @Override public java.security.Principal getUserPrincipal() {
          return () -> user;
        }
      }, resp);
    }

    @Override public int getOrder() {
      return org.springframework.core.Ordered.HIGHEST_PRECEDENCE;
    }
  }
}

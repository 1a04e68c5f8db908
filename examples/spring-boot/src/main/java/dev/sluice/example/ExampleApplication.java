package dev.sluice.example;

import dev.sluice.Decision;
import dev.sluice.RateLimiter;
import dev.sluice.guard.RateLimitExceededException;
import dev.sluice.spring.RateLimited;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** The README's example: an HTTP rule, two limits on one method, a fallback, a limiter bean by name. */
@SpringBootApplication
public class ExampleApplication {
  public static void main(String[] args) {
    SpringApplication.run(ExampleApplication.class, args);
  }

  @RestController
  static class Api {
    private final Search search;
    private final RateLimiter api;

    Api(Search search, @Qualifier("api") RateLimiter api) {
      this.search = search;
      this.api = api;
    }

    /** Behind the HTTP rule (sluice.http.rules): 429 with the limit headers after 5 in 10 s. */
    @GetMapping("/hello")
    String hello() {
      return "hello\n";
    }

    /** Two limits at once, per user and for everyone; a refusal is a 429 problem response. */
    @GetMapping("/search")
    String search(@RequestParam String q, @RequestHeader(name = "X-User", defaultValue = "anonymous") String user) {
      return search.find(user, q);
    }

    /** The same limits with a fallback answer instead of a 429. */
    @GetMapping("/search-or-later")
    String searchOrLater(@RequestParam String q, @RequestHeader(name = "X-User", defaultValue = "anonymous") String user) {
      return search.findOrLater(user, q);
    }

    /** A limiter injected by its policy's name, used directly: what the budget of a key looks like now. */
    @GetMapping("/budget")
    String budget(@RequestParam String key) {
      Decision d = api.peek(key);
      return key + ": " + d.remaining() + " of " + d.limit() + " left\n";
    }
  }

  @Service
  public static class Search {
    @RateLimited(policy = "search", key = "'user:' + #user")
    @RateLimited(policy = "search-all")
    public String find(String user, String q) {
      return "results for '" + q + "' (" + user + ")\n";
    }

    @RateLimited(policy = "search", key = "'user:' + #user", fallbackMethod = "later")
    @RateLimited(policy = "search-all", fallbackMethod = "later")
    public String findOrLater(String user, String q) {
      return find(user, q);
    }

    String later(String user, String q, RateLimitExceededException refused) {
      return "busy: try '" + q + "' again in " + refused.retryAfterSeconds() + " s\n";
    }
  }
}

package dev.sluice.quarkus;

import dev.sluice.Decision;
import dev.sluice.Policy;
import dev.sluice.RateLimiter;
import dev.sluice.Ticker;
import dev.sluice.http.HttpRateLimit;
import dev.sluice.http.HttpVerdict;
import dev.sluice.http.KeyResolver;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RequestView;
import dev.sluice.http.TrustedProxies;
import dev.sluice.kernel.HeaderFamily;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * {@code sluice.http.rules}, compiled once at start: a request is charged by the first rule whose
 * patterns and methods match it; requests no rule matches pass uncharged.
 */
final class HttpRules {
  private final List<Rule> rules;

  HttpRules(SluiceConfig.Http http, Function<String, RateLimiter> limiters, Ticker ticker) {
    List<String> cidrs = http.trustedProxies().orElse(List.of());
    TrustedProxies proxies;
    try {
      proxies = cidrs.isEmpty() ? TrustedProxies.none() : TrustedProxies.of(cidrs);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("sluice.http.trusted-proxies: " + e.getMessage(), e);
    }
    List<Rule> compiled = new ArrayList<>();
    if (http.enabled()) {
      for (int i = 0; i < http.rules().size(); i++) {
        compiled.add(new Rule("sluice.http.rules[" + i + "]", http.rules().get(i), limiters, proxies, ticker));
      }
    }
    this.rules = List.copyOf(compiled);
  }

  int size() {
    return rules.size();
  }

  /** The first rule matching {@code method} and {@code path}, or null. */
  Rule match(String method, String path) {
    for (Rule r : rules) {
      if (r.matches(method, path)) {
        return r;
      }
    }
    return null;
  }

  /** One compiled rule. */
  static final class Rule {
    final HttpRateLimit rateLimit;
    final RateLimiter limiter;
    final Policy policy;
    final long permits;
    private final List<Pattern> patterns;
    private final Set<String> methods;

    Rule(String where, SluiceConfig.Rule r, Function<String, RateLimiter> limiters, TrustedProxies proxies, Ticker ticker) {
      String name = r.policy().orElse("").strip();
      if (name.isEmpty()) {
        throw new IllegalArgumentException(where + ".policy is missing; name one of sluice.policies");
      }
      try {
        this.limiter = limiters.apply(name);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(where + ".policy: " + e.getMessage(), e);
      }
      this.policy = limiter.policy();
      if (r.permits() < 1) {
        throw new IllegalArgumentException(where + ".permits is " + r.permits() + "; a request costs at least 1 permit");
      }
      this.permits = r.permits();
      KeyResolver key = key(where, r.key(), proxies);
      List<HeaderFamily> families = new ArrayList<>();
      for (String h : r.headers()) {
        families.add(HeaderFamily.parse(where + ".headers", h));
      }
      HeaderFamily union = HeaderFamily.union(families);
      try {
        this.rateLimit = HttpRateLimit.builder(limiter).policy(policy).keyResolver(key)
            .headers(RateLimitHeaders.of(union.ietf(), union.legacy())).ticker(ticker)
            .skipSuccessfulRequests(r.skipOnSuccess()).skipFailedRequests(r.skipOnFailure()).build();
      } catch (IllegalStateException e) { // the kernel's RefundRule: both skip options at once, a conflict
        throw new IllegalStateException(where + ".skip-on-success and " + where + ".skip-on-failure: " + e.getMessage(), e);
      }
      List<Pattern> ps = new ArrayList<>();
      for (String p : r.patterns().orElse(List.of())) {
        ps.add(pattern(where + ".patterns", p));
      }
      this.patterns = List.copyOf(ps);
      Set<String> ms = new TreeSet<>();
      for (String m : r.methods().orElse(List.of())) {
        ms.add(m.strip().toUpperCase(Locale.ROOT));
      }
      this.methods = Set.copyOf(ms);
    }

    /** {@code remoteAddress} or {@code header:NAME}; anything else is refused with what is accepted. */
    private static KeyResolver key(String where, String key, TrustedProxies proxies) {
      String k = key.strip();
      if (k.equals("remoteAddress")) {
        return KeyResolver.forwardedFor(proxies);
      }
      if (k.regionMatches(true, 0, "header:", 0, 7) && !k.substring(7).isBlank()) {
        return KeyResolver.header(k.substring(7).strip());
      }
      throw new IllegalArgumentException(where + ".key '" + key + "' is unknown; use remoteAddress or header:NAME");
    }

    /** {@code /api/**}: the path and everything under it; {@code *}: one segment; anything else: itself. */
    private static Pattern pattern(String where, String p) {
      String s = p.strip();
      if (!s.startsWith("/")) {
        throw new IllegalArgumentException(where + " '" + p + "' is not a path pattern; start it with / (/api/**, /users/*)");
      }
      StringBuilder re = new StringBuilder();
      if (s.endsWith("/**")) {
        s = s.substring(0, s.length() - 3);
        appendSegments(re, s);
        re.append("(/.*)?");
      } else {
        appendSegments(re, s);
      }
      return Pattern.compile(re.toString());
    }

    private static void appendSegments(StringBuilder re, String s) {
      String[] parts = s.split("\\*", -1);
      for (int i = 0; i < parts.length; i++) {
        if (i > 0) {
          re.append("[^/]+");
        }
        if (!parts[i].isEmpty()) {
          re.append(Pattern.quote(parts[i]));
        }
      }
    }

    boolean matches(String method, String path) {
      if (!methods.isEmpty() && !methods.contains(method)) {
        return false;
      }
      if (patterns.isEmpty()) {
        return true;
      }
      for (Pattern p : patterns) {
        if (p.matcher(path).matches()) {
          return true;
        }
      }
      return false;
    }

    /** True when the handler's outcome matters: a skip option is on. */
    boolean refundsPossible() {
      return rateLimit.skipFailedRequests() || rateLimit.skipSuccessfulRequests();
    }

    String keyOf(RequestView request) {
      return rateLimit.keyOf(request);
    }

    /** The one verdict of every front end on {@code d}. */
    HttpVerdict verdict(Decision d) {
      return HttpVerdict.of(d, rateLimit.ticker().nowMicros(), rateLimit.headers());
    }
  }
}

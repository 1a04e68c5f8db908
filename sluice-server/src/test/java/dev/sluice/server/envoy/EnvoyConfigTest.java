package dev.sluice.server.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Algorithm;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Reading envoyproxy/ratelimit's YAML: every mistake names the file, the line and the key. */
class EnvoyConfigTest {
  static EnvoyConfig parse(String yaml) {
    return EnvoyConfig.parse(Map.of("rl.yaml", yaml));
  }

  static void fails(String yaml, String message) {
    assertThatThrownBy(() -> parse(yaml)).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
  }

  @Test void unknownKeysNameFileLineAndKey() {
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit:
              unit: second
              requests_per_unit: 1
              request_per_unit: 2
        """, "rl.yaml:7: unknown key 'request_per_unit' in rate_limit; allowed here: unit, requests_per_unit, unlimited, name, replaces, sluice");
    fails("""
        domain: d
        descriptors:
          - key: k
            shadowmode: true
        """, "rl.yaml:4: unknown key 'shadowmode' in a descriptor; allowed here: key, value, rate_limit, descriptors, shadow_mode,"
        + " detailed_metric, value_to_metric, share_threshold, metadata, quota_mode");
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit:
              unit: second
              requests_per_unit: 1
              sluice:
                algorithm: gcra
                capacity: 3
        """, "rl.yaml:9: unknown key 'capacity' in the sluice extension; allowed here: algorithm, burst");
    fails("domain: d\nratelimits: []\n", "rl.yaml:2: unknown key 'ratelimits' in the top level; allowed here: domain, descriptors");
  }

  @Test void theReferencesOwnRulesOfValidity() {
    fails("descriptors: []\n", "rl.yaml:1: 'domain' is missing or empty; every file configures one domain");
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit:
              unit: fortnight
              requests_per_unit: 1
        """, "rl.yaml:5: invalid rate limit unit 'fortnight'; use second, minute, hour, day, week, month or year");
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit:
              unlimited: true
              unit: second
        """, "rl.yaml:6: should not specify rate limit unit when unlimited");
    fails("""
        domain: d
        descriptors:
          - key: k
          - key: k
        """, "rl.yaml:4: duplicate descriptor composite key 'd.k'");
    fails("""
        domain: d
        descriptors:
          - key: k
            value: v
            share_threshold: true
        """, "rl.yaml:5: share_threshold needs a wildcard value (one with '*'), not 'v'");
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit:
              name: a
              replaces:
                - name: a
              unit: second
              requests_per_unit: 1
        """, "rl.yaml:7: replaces should not contain name of same descriptor ('a')");
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit:
              unit: year
              requests_per_unit: 4000000000
              sluice:
                algorithm: token-bucket
        """, "rl.yaml:5: rate limit of 'd.k' (4000000000 per year, token-bucket): "
        + "token bucket: capacity 4000000000 times refill period 31536000000000 (microseconds) exceeds 2^52, the exact-integer range"
        + " every backend computes in; use a smaller capacity or a shorter refill period with proportional numbers");
  }

  @Test void eachAlgorithmAndItsDefaults() {
    EnvoyConfig c = parse("""
        domain: d
        descriptors:
          - key: a
            rate_limit: {unit: minute, requests_per_unit: 60}
          - key: b
            rate_limit: {unit: second, requests_per_unit: 10, sluice: {algorithm: token-bucket}}
          - key: c
            rate_limit: {unit: hour, requests_per_unit: 5, sluice: {algorithm: gcra, burst: 2}}
          - key: e
            rate_limit: {unit: day, requests_per_unit: 3, sluice: {algorithm: sliding-log}}
        """);
    assertThat(c.policies()).extracting(p -> p.algorithm().getClass().getSimpleName())
        .containsExactly("FixedWindow", "TokenBucket", "Gcra", "SlidingLog");
    Algorithm.TokenBucket tb = (Algorithm.TokenBucket) c.policies().get(1).algorithm();
    assertThat(tb.capacity()).isEqualTo(10);
    assertThat(c.policies()).extracting(p -> p.name()).containsExactly("d.a", "d.b", "d.c", "d.e");
  }

  /**
   * Issue 28, item 5: the extension's algorithm is the core's one parse, so an unknown name lists the
   * accepted ones in the policy file's order (Envoy listed the sliding log third), and each name reads
   * {@code requests_per_unit} per {@code unit} as that algorithm's own parameters.
   */
  @Test void theAlgorithmIsTheCoresOneParseAndReadsTheRateAsItsOwnParameters() {
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit: {unit: second, requests_per_unit: 1, sluice: {algorithm: leaky-bucket}}
        """, "rl.yaml:4: unknown algorithm 'leaky-bucket'; use one of fixed-window, sliding-window, token-bucket, gcra, sliding-log");
    fails("""
        domain: d
        descriptors:
          - key: k
            rate_limit: {unit: second, requests_per_unit: 1, sluice: {algorithm: sliding-window, burst: 3}}
        """, "rl.yaml:4: burst applies to token-bucket and gcra, not to sliding-window");
    EnvoyConfig c = parse("""
        domain: d
        descriptors:
          - key: a
            rate_limit: {unit: minute, requests_per_unit: 60, sluice: {algorithm: fixed-window}}
          - key: b
            rate_limit: {unit: minute, requests_per_unit: 60, sluice: {algorithm: sliding-window}}
          - key: c
            rate_limit: {unit: minute, requests_per_unit: 60, sluice: {algorithm: token-bucket, burst: 90}}
          - key: e
            rate_limit: {unit: minute, requests_per_unit: 60, sluice: {algorithm: gcra}}
          - key: f
            rate_limit: {unit: minute, requests_per_unit: 60, sluice: {algorithm: sliding-log}}
        """);
    long minute = 60_000_000L;
    assertThat(c.policies()).extracting(p -> p.algorithm()).containsExactly(new Algorithm.FixedWindow(60, minute),
        new Algorithm.SlidingWindow(60, minute), new Algorithm.TokenBucket(90, 60, minute), new Algorithm.Gcra(60, minute, 60),
        new Algorithm.SlidingLog(60, minute));
  }

  @Test void policyNamesAreValidAndStableForAnyStatKey() {
    assertThat(EnvoyConfig.policyName("d.remote_address_50.0.0.5")).isEqualTo("d.remote_address_50.0.0.5");
    String odd = EnvoyConfig.policyName("example9.path_/api/*/action");
    assertThat(odd).matches("example9.path__api___action-[0-9a-f]{16}").isEqualTo(EnvoyConfig.policyName("example9.path_/api/*/action"));
    assertThat(EnvoyConfig.policyName("d." + "x".repeat(200))).hasSize(64);
  }

  /**
   * A budget key is the domain, then each entry namespaced by its key, joined by the one rule of
   * composed keys ({@code Keys}); a shared wildcard stands for every value it matches.
   */
  @Test void budgetKeysAreTheDomainAndEachEntryNamespacedByItsKey() {
    EnvoyConfig c = parse("""
        domain: d
        descriptors:
          - key: path
            value: /api/*
            share_threshold: true
            descriptors:
              - key: remote_address
                rate_limit: {unit: second, requests_per_unit: 5}
        """);
    assertThat(c.match("d", List.of(Map.entry("path", "/api/x"), Map.entry("remote_address", "2001:db8::1"))).key())
        .isEqualTo("d|path~/api/*|remote_address:2001:db8::1");
    assertThat(EnvoyConfig.plainKey("d", List.of(Map.entry("a|b", "c:d"), Map.entry("e", ""))))
        .isEqualTo("d|a\\\\\\|b:c:d|e:");
  }
}

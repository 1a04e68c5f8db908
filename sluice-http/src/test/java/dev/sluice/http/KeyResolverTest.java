package dev.sluice.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KeyResolverTest {
  private static final TrustedProxies EDGE = TrustedProxies.of("10.0.0.0/8", "fd00::/8");

  @Test void clientAddressIgnoresEveryForwardingHeader() {
    FakeRequest r = new FakeRequest("203.0.113.7").header("X-Forwarded-For", "1.1.1.1").header("X-Real-IP", "2.2.2.2");
    assertThat(KeyResolver.clientAddress().resolve(r)).isEqualTo("ip:203.0.113.7");
  }

  @Test void forwardedForTakesTheRightmostUntrustedHop() {
    // client 198.51.100.9 -> edge 10.0.0.1 -> internal proxy 10.0.0.2 -> us; a spoofed leftmost hop is ignored.
    FakeRequest r = new FakeRequest("10.0.0.2").header("X-Forwarded-For", "6.6.6.6, 198.51.100.9, 10.0.0.1");
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(r)).isEqualTo("ip:198.51.100.9");
  }

  @Test void forwardedForReadsSeveralHeaderLinesInOrder() {
    FakeRequest r = new FakeRequest("10.0.0.2").header("X-Forwarded-For", "6.6.6.6").header("X-Forwarded-For", "198.51.100.9,10.0.0.1");
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(r)).isEqualTo("ip:198.51.100.9");
  }

  @Test void forwardedForFromAnUntrustedPeerIsIgnored() {
    FakeRequest r = new FakeRequest("203.0.113.7").header("X-Forwarded-For", "198.51.100.9");
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(r)).isEqualTo("ip:203.0.113.7");
  }

  @Test void forwardedForWithGarbageHopIsUnknownNotAFreshKey() {
    FakeRequest r = new FakeRequest("10.0.0.2").header("X-Forwarded-For", "198.51.100.9, evil.example");
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(r)).isNull();
    assertThat(HttpRateLimit.normalize(null)).isEqualTo("unknown");
  }

  @Test void forwardedForAllTrustedTakesTheLeftmostAndIpv6Works() {
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(new FakeRequest("10.0.0.2").header("X-Forwarded-For", "10.9.9.9, 10.0.0.1")))
        .isEqualTo("ip:10.9.9.9");
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(new FakeRequest("fd00::1").header("X-Forwarded-For", "[2001:db8::5]:443")))
        .isEqualTo("ip:2001:db8::5");
    assertThat(KeyResolver.forwardedFor(EDGE).resolve(new FakeRequest("10.0.0.2"))).isEqualTo("ip:10.0.0.2");
  }

  /** Issue 17.11: IPv6 keys read ip:2001:db8:0:0:0:0:0:1 (the JDK's form), not RFC 5952's ip:2001:db8::1. */
  @Test void ipv6KeysAreInRfc5952Form() {
    String[][] cases = {
        {"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
        {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"}, // equal runs: the first is compressed
        {"2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"}, // the longest run, not the first
        {"2001:db8:1:1:1:1:0:1", "2001:db8:1:1:1:1:0:1"}, // one zero group stays
        {"0:0:0:0:0:0:0:0", "::"},
        {"0:0:0:0:0:0:0:1", "::1"},
        {"fe80:0:0:0:0:0:0:0", "fe80::"},
        {"2001:0db8:00aa:0000:0000:0000:0bcd:0001", "2001:db8:aa::bcd:1"},
        {"::ffff:192.0.2.1", "192.0.2.1"}, // IPv4-mapped: the client's IPv4 key
    };
    for (String[] c : cases) {
      assertThat(KeyResolver.clientAddress().resolve(new FakeRequest(c[0]))).as(c[0]).isEqualTo("ip:" + c[1]);
    }
  }

  @Test void forwardedHeaderOfRfc7239() {
    KeyResolver r = KeyResolver.forwarded(EDGE);
    FakeRequest viaEdge = new FakeRequest("10.0.0.2")
        .header("Forwarded", "for=6.6.6.6;proto=https, for=\"[2001:db8:cafe::17]:4711\";by=10.0.0.1")
        .header("Forwarded", "For=10.0.0.1;host=\"a,b;c\"");
    assertThat(r.resolve(viaEdge)).isEqualTo("ip:2001:db8:cafe::17");
    assertThat(r.resolve(new FakeRequest("10.0.0.2").header("Forwarded", "for=_hidden"))).isNull();
    assertThat(r.resolve(new FakeRequest("10.0.0.2").header("Forwarded", "for=\"unterminated"))).isNull();
    assertThat(r.resolve(new FakeRequest("10.0.0.2").header("Forwarded", "proto=https"))).isNull();
    assertThat(r.resolve(new FakeRequest("203.0.113.7").header("Forwarded", "for=198.51.100.9"))).isEqualTo("ip:203.0.113.7");
    assertThat(r.resolve(new FakeRequest("10.0.0.2").header("Forwarded", "for=10.9.9.9"))).isEqualTo("ip:10.9.9.9");
    assertThat(r.resolve(new FakeRequest("10.0.0.2"))).isEqualTo("ip:10.0.0.2");
  }

  @Test void realIpHeaderOnlyFromTrustedProxies() {
    KeyResolver r = KeyResolver.proxyHeader("X-Real-IP", EDGE);
    assertThat(r.resolve(new FakeRequest("10.1.2.3").header("X-Real-IP", "198.51.100.9"))).isEqualTo("ip:198.51.100.9");
    assertThat(r.resolve(new FakeRequest("203.0.113.7").header("X-Real-IP", "198.51.100.9"))).isEqualTo("ip:203.0.113.7");
    assertThat(KeyResolver.proxyHeader("X-Real-IP").resolve(new FakeRequest("203.0.113.7"))).isNull();
    assertThat(KeyResolver.proxyHeader("X-Real-IP").resolve(new FakeRequest("203.0.113.7").header("X-Real-IP", "01.2.3.4"))).isNull();
  }

  @Test void headerPrincipalRouteAndCombinators() {
    FakeRequest r = new FakeRequest("203.0.113.7").header("X-Api-Key", " k1 ").principal("alice");
    assertThat(KeyResolver.header("X-Api-Key").resolve(r)).isEqualTo("header:x-api-key:k1");
    assertThat(KeyResolver.principal().resolve(r)).isEqualTo("user:alice");
    assertThat(KeyResolver.route().resolve(r)).isEqualTo("route:GET /search");
    assertThat(KeyResolver.principal().and(KeyResolver.route()).resolve(r)).isEqualTo("user:alice|route:GET /search");
    FakeRequest anonymous = new FakeRequest("203.0.113.7");
    assertThat(KeyResolver.principal().orElse(KeyResolver.clientAddress()).resolve(anonymous)).isEqualTo("ip:203.0.113.7");
    assertThat(KeyResolver.principal().and(KeyResolver.route()).resolve(anonymous)).isNull();
  }

  /**
   * Issue 27, finding 3: {@code and} joined its parts with an unescaped {@code |}, so a user named
   * {@code alice|route:GET /a} on {@code /b} and alice on {@code /a|route:GET /b} shared one key (a path
   * a real client cannot send unencoded, hence here and not through a server). Now the parts are
   * escaped (only a value holding a separator looks different).
   */
  @Test void joinedKeysOfDifferentPartsNeverCollide() {
    KeyResolver perUserPerRoute = KeyResolver.principal().and(KeyResolver.route());
    String a = perUserPerRoute.resolve(new FakeRequest("203.0.113.7").principal("alice|route:GET /a").path("/b"));
    String b = perUserPerRoute.resolve(new FakeRequest("203.0.113.7").principal("alice").path("/a|route:GET /b"));
    assertThat(a).isEqualTo("user:alice\\\\\\|route:GET /a|route:GET /b");
    assertThat(b).isEqualTo("user:alice|route:GET /a\\\\\\|route:GET /b");
    assertThat(a).isNotEqualTo(b);
    assertThat(KeyResolver.principal().resolve(new FakeRequest("203.0.113.7").principal("a\\|b"))).isEqualTo("user:a\\\\\\|b");
  }

  /** A header named like another source gives a header key, never that source's key. */
  @Test void aHeaderNamedLikeASourceStaysAHeader() {
    FakeRequest r = new FakeRequest("203.0.113.7").header("Ip", "203.0.113.7").header("User", "alice").header("Sha256", "ab");
    assertThat(KeyResolver.header("Ip").resolve(r)).isEqualTo("header:ip:203.0.113.7");
    assertThat(KeyResolver.header("User").resolve(r)).isEqualTo("header:user:alice");
    assertThat(KeyResolver.header("Sha256").resolve(r)).isEqualTo("header:sha256:ab");
    assertThat(KeyResolver.header("X-Api-Key").resolve(new FakeRequest("203.0.113.7").header("X-Api-Key", "  "))).isNull();
  }

  @Test void longKeysAreHashedToFitAnyBackend() {
    String jwt = "header:x-api-key:" + "a".repeat(600);
    String k = HttpRateLimit.normalize(jwt);
    assertThat(k).startsWith("sha256:").hasSize(7 + 64);
    assertThat(HttpRateLimit.normalize("header:x-api-key:\ud800")).startsWith("sha256:");
    assertThat(HttpRateLimit.normalize("  ")).isEqualTo("unknown");
  }

  @Test void trustedProxiesParseCidrsAndRefuseNames() {
    TrustedProxies p = TrustedProxies.of("192.168.1.77/24", "::1", "::ffff:172.16.0.1");
    assertThat(p.blocks()).containsExactly("192.168.1.0/24", "::1/128", "172.16.0.1/32");
    assertThat(p.contains("192.168.1.200")).isTrue();
    assertThat(p.contains("192.168.2.1")).isFalse();
    assertThat(p.contains("::ffff:192.168.1.5")).isTrue();
    assertThat(p.contains("[::1]")).isTrue();
    assertThat(p.contains("not-an-ip")).isFalse();
    assertThatThrownBy(() -> TrustedProxies.of("proxy.internal"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("trusted proxy \"proxy.internal\" is not an IP address or CIDR block; use a literal such as "
            + "\"10.0.0.0/8\", \"192.168.1.7\" or \"fd00::/8\" (host names are not accepted)");
    assertThatThrownBy(() -> TrustedProxies.of("10.0.0.0/33"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("trusted proxy \"10.0.0.0/33\" has prefix length 33; it must be between 0 and 32 for an IPv4 block");
    assertThatThrownBy(() -> KeyResolver.header(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("header name \" \" is blank; name a header such as \"X-Real-IP\"");
  }
}

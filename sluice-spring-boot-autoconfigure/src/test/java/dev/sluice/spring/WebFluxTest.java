package dev.sluice.spring;

import static dev.sluice.spring.EventLoops.BLOCKED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.RateLimiter;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The WebFlux application (Reactor Netty, random port) on the memory store: the rules' WebFilter and
 * {@code Mono} methods under {@code @RateLimited} (decided, answered by a fallback's Mono, settled at
 * their cost), with BlockHound recording every blocking call on an event-loop thread. None may be
 * made; a handler that sleeps on purpose proves the detector is on.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "spring.main.web-application-type=reactive")
class WebFluxTest {
  @LocalServerPort int port;
  @Autowired @Qualifier("tokens") RateLimiter tokens;
  @Autowired TestApp.Miswired miswired;
  Client client;
  final String id = UUID.randomUUID().toString();

  @BeforeAll static void blockHound() {
    EventLoops.watch();
  }

  @BeforeEach void client() {
    client = new Client(port);
    BLOCKED.clear();
  }

  @Test void requestsRunOnTheEventLoopAndTheDetectorSeesABlockingCallThere() {
    assertThat(client.get("/thread").body()).startsWith("reactor-http-");
    assertThat(client.get("/sleep").body()).isEqualTo("slept");
    assertThat(BLOCKED).anySatisfy(b -> assertThat(b).contains("sleep on reactor-http-"));
  }

  @Test void theWebFilterRefusesWithTheVerdictAndNeverBlocks() {
    for (int i = 1; i <= 3; i++) {
      HttpResponse<String> ok = client.get("/api/hello", "X-Client", id);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.headers().firstValue("X-RateLimit-Remaining")).hasValue(Integer.toString(3 - i));
      assertThat(ok.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=3600");
    }
    HttpResponse<String> refused = client.get("/api/hello", "X-Client", id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(refused.headers().firstValue("Retry-After")).isPresent();
    assertThat(refused.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
    assertThat(Client.json(refused).get("reason").asText()).isEqualTo("limit_exceeded");
    for (int i = 0; i < 4; i++) {
      assertThat(client.post("/login?ok=true", "X-Client", id).statusCode()).isEqualTo(200);
    }
    assertThat(BLOCKED).isEmpty();
  }

  /**
   * A skipped success is refunded before its response commits. The refund used to run after the
   * chain, when the answer could already be on its way, and the client's next request raced it: in a
   * CI run under load, the third of four successful logins under a limit of 2 was refused. The race
   * needs a starved machine; on a quiet one this test passed with the old code too, so it guards the
   * ordering rather than reproducing the bug.
   */
  @Test void successfulLoginsUnderSkipOnSuccessNeverRunIntoTheLimit() {
    String client2 = UUID.randomUUID().toString();
    for (int i = 0; i < 60; i++) {
      assertThat(client.post("/login?ok=true", "X-Client", client2).statusCode()).as("login %d", i).isEqualTo(200);
    }
    assertThat(BLOCKED).isEmpty();
  }

  /**
   * A response lost after a skip-on-success refund. The refund runs on the bounded-elastic scheduler
   * and the commit used to go on from that thread; on Boot 4 (Reactor Netty 1.3) about one response
   * in ten thousand was then never written, and the client timed out (CI saw it within the 60 logins
   * above, under load; on Boot 4, runs of 3,000 logins lost one in two runs of five, and with the fix
   * runs of 20,000 lost none in three). The race is too rare to reproduce in a test, so this asserts
   * what removed it: the commit goes on on the connection's event loop, where the commit action of
   * the filter after Sluice's runs.
   */
  @Test void aRefundedResponseIsCommittedOnTheEventLoopNotTheRefundsThread() {
    String client3 = UUID.randomUUID().toString();
    for (int i = 0; i < 5; i++) {
      HttpResponse<String> r = client.post("/login?ok=true", "X-Client", client3, "X-Commit-Probe", "1");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("X-Commit-Thread")).as("login %d", i).hasValueSatisfying(
          t -> assertThat(t).startsWith("reactor-http-"));
    }
    assertThat(BLOCKED).isEmpty();
  }

  @Test void aMonoMethodUnderTheAnnotationIsDecidedAsynchronously() {
    assertThat(client.get("/reactive/" + id).body()).isEqualTo("hello later " + id);
    assertThat(client.get("/reactive/" + id).statusCode()).isEqualTo(200);
    HttpResponse<String> refused = client.get("/reactive/" + id);
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"per-user\";q=2;w=3600");
    assertThat(Client.json(refused).get("policy").asText()).isEqualTo("per-user");
    assertThat(BLOCKED).isEmpty();
  }

  @Test void aMonoMethodsFallbackAnswersARefusalWithItsMonoAndNothingBlocks() {
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> ok = client.get("/reactive-or-busy/" + id);
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("hello later " + id);
    }
    HttpResponse<String> refused = client.get("/reactive-or-busy/" + id);
    assertThat(refused.statusCode()).isEqualTo(200);
    assertThat(refused.body()).isEqualTo("busy later " + id + " (per-user)");
    assertThat(BLOCKED).isEmpty();
  }

  @Test void aMonoMethodsFallbackOfAnotherTypeIsAnErrorNamingBothTypes() {
    assertThatThrownBy(() -> miswired.later(id)).isInstanceOf(IllegalStateException.class)
        .hasMessage("@RateLimited on dev.sluice.spring.TestApp$Miswired.later: fallbackMethod 'plain' returns String, "
            + "but later returns Mono and a refusal answers with the fallback's result; make plain return Mono "
            + "(for example Mono.just(...))");
  }

  @Test void aMonoMethodsCostSettlesOnTheEmittedValueAndNothingBlocks() {
    long used = 0;
    for (long u : new long[] {37, 100, 0, 150, 1}) {
      HttpResponse<String> r = client.get("/complete-later/" + id + "?max=100&used=" + u);
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).isEqualTo(Long.toString(u));
      used += u;
    }
    // Each call reserved 100; the settlement ran before the value went on, so the count is exact now.
    assertThat(tokens.policy().limit() - tokens.peek("value:" + id).remaining()).isEqualTo(used);
    assertThat(BLOCKED).isEmpty();
  }
}

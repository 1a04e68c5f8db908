package dev.sluice.spring.gatewaymvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.spring.gateway.SluiceFilterFunctions;
import dev.sluice.spring.gateway.SluiceFilterFunctions.Config;
import dev.sluice.kernel.Store;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The servlet gateway on the memory store, on a frozen clock: the gateway's refusal and the servlet
 * filter's are byte-equal. Also the shortcut form, whose key is the client address, and the settings
 * refused when a route is built.
 */
class MvcMemoryGatewayTest extends MvcGatewayContract {
  /** A clock that never moves, so that two front ends' verdicts on the same count are the same bytes. */
  @Configuration(proxyBeanMethods = false)
  static class FrozenClock {
    @Bean(destroyMethod = "close")
    Store frozenMemoryStore() {
      return Store.memory(10_000, dev.sluice.testing.ManualTicker.at(1_800_000_000_000_000L));
    }
  }

  @BeforeAll static void start() throws Exception {
    gateway(new Class<?>[] {FrozenClock.class});
  }

  @Override boolean exactClock() {
    return true;
  }

  @Test void aRequestWithoutAKeyIsChargedToTheSharedUnknownKey() throws Exception {
    assertThat(get("/hour/u", null).statusCode()).isEqualTo(200);
    assertThat(limiter("hour").peek("unknown").remaining()).isEqualTo(1);
    assertThat(get("/both/u", null).statusCode()).as("the SpEL key gives null: unknown too").isEqualTo(200);
    assertThat(limiter("a").peek("unknown").remaining()).isEqualTo(2);
  }

  @Test void theShortcutFormChargesTheClientAddress() throws Exception {
    for (int i = 0; i < 2; i++) {
      assertThat(get("/short/s", id()).statusCode()).as("one address, whatever X-Client says").isEqualTo(200);
    }
    HttpResponse<String> refused = get("/short/s", id());
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(limiter("hour").peek("ip:127.0.0.1").remaining()).isZero();
  }

  @Test void aRouteNamingAPolicyThatIsNotThereFailsItsRequestsNeverLetsThemThrough() throws Exception {
    int before = downstream.hits.get();
    assertThat(get("/nope/n", id()).statusCode()).isEqualTo(500);
    assertThat(downstream.hits.get()).isEqualTo(before);
  }

  @Test void badSettingsAreRefusedWhenTheRouteIsBuilt() {
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice("a", "a")).hasMessage("Sluice filter [a, a] names policy 'a' twice");
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice(new Config())).hasMessageStartingWith("the Sluice filter names no policy");
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice(c -> c.setPolicies("a").setKey("headers().(")))
        .hasMessageStartingWith("Sluice filter [a]: key 'headers().(' is not a SpEL expression");
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice(c -> c.setPolicies("a").setKey("x").setKeyResolver("clientKey")))
        .hasMessage("Sluice filter [a] has both key-resolver and key; give one");
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice(c -> c.setPolicies("a").setRefundOn(List.of("sometimes"))))
        .hasMessageStartingWith("Sluice filter [a]: refund-on 'sometimes' is unknown");
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice(c -> c.setPolicies("a").setHeaders(List.of("draft"))))
        .hasMessage("Sluice filter [a]: headers 'draft' is unknown; use ietf, legacy, all or none");
    assertThatThrownBy(() -> SluiceFilterFunctions.sluice(c -> c.setPolicies("a").setPermits(0)))
        .hasMessage("Sluice filter [a]: permits is 0; a request costs at least 1 permit");
  }
}

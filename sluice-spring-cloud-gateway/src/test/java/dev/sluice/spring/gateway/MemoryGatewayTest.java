package dev.sluice.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Ticker;
import dev.sluice.kernel.Store;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The gateway on the memory store, on a frozen clock: the gateway's refusal and the JDK filter's are
 * byte-equal. Also the shortcut form, whose key is the client address (one per test JVM here).
 */
class MemoryGatewayTest extends GatewayContract {
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
    // The key resolver finds no X-Client: Sluice's rule in every front end, one shared budget.
    assertThat(get("/hour/u", null).statusCode()).isEqualTo(200);
    assertThat(limiter("hour").peek("unknown").remaining()).isEqualTo(1);
    assertThat(get("/both/u", null).statusCode()).as("the SpEL key gives null: unknown too").isEqualTo(200);
    assertThat(limiter("a").peek("unknown").remaining()).isEqualTo(2);
  }

  @Test void aRouteNamingAPolicyThatIsNotThereIsRefusedWhenBuilt() {
    SluiceGatewayFilterFactory f = app.getBean(SluiceGatewayFilterFactory.class);
    assertThatThrownBy(() -> f.apply(new SluiceGatewayFilterFactory.Config().setPolicies("hour", "nope")))
        .hasMessageStartingWith("no policy named 'nope' in sluice.policies; the policies are [hour, a, b, refund, wide, wide2]");
    assertThatThrownBy(() -> f.apply(new SluiceGatewayFilterFactory.Config().setPolicies("a", "a")))
        .hasMessage("Sluice filter [a, a] names policy 'a' twice");
    assertThatThrownBy(() -> f.apply(new SluiceGatewayFilterFactory.Config().setPolicies("a").setKey("request.(")))
        .hasMessageStartingWith("Sluice filter [a]: key 'request.(' is not a SpEL expression");
  }

  @Test void theShortcutFormChargesTheClientAddress() throws Exception {
    for (int i = 0; i < 2; i++) {
      assertThat(get("/short/s", id()).statusCode()).as("one address, whatever X-Client says").isEqualTo(200);
    }
    HttpResponse<String> refused = get("/short/s", id());
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(limiter("hour").peek("ip:127.0.0.1").remaining()).isZero();
  }
}

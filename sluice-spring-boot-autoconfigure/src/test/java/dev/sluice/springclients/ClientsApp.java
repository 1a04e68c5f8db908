package dev.sluice.springclients;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The application SluiceRedisClientsTest starts: outside {@code dev.sluice.spring}, so that its
 * component scan does not take the auto-configurations' member classes for the application's own
 * configuration (TestApp's does, and then evaluates their bean conditions before any auto-configuration
 * ran): here the auto-configurations run in their declared order, as in an application. The policies
 * and HTTP rules are the shared application.yaml's.
 */
@SpringBootApplication
public class ClientsApp {
  /** The endpoint behind the {@code bulk} rule. */
  @RestController
  static class Bulk {
    @GetMapping("/bulk")
    String bulk() {
      return "bulk";
    }
  }
}

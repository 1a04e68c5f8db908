package dev.sluice.examples.quarkus;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

/** The example on a real (random) port: the rule's fourth request and the third report are 429s. */
@QuarkusTest
class ExampleTest {
  @Test
  void theRuleRefusesTheFourthHello() {
    for (int i = 0; i < 3; i++) {
      given().get("/hello").then().statusCode(200).header("X-RateLimit-Limit", "3");
    }
    given().get("/hello").then().statusCode(429).header("Retry-After", org.hamcrest.Matchers.notNullValue())
        .contentType("application/problem+json").body(containsString("\"policy\":\"hello\""));
  }

  @Test
  void rateLimitedRefusesTheThirdReportOfATenant() {
    given().get("/reports/acme").then().statusCode(200);
    given().get("/reports/acme").then().statusCode(200);
    given().get("/reports/acme").then().statusCode(429).body(containsString("\"policy\":\"reports\""));
    given().get("/reports/other").then().statusCode(200);
  }
}

package dev.sluice.examples.quarkus;

import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;

/** {@code GET /hello}: limited by the HTTP rule; {@code GET /reports/{tenant}}: by {@code @RateLimited} on {@link Reports}. */
@Path("/")
public class Hello {
  @Inject
  Reports reports;

  @GET
  @Path("hello")
  public String hello() {
    return "hello\n";
  }

  @GET
  @Path("reports/{tenant}")
  public String report(@PathParam("tenant") String tenant) {
    return reports.export(tenant);
  }
}

/**
 * Sluice for HTTP: a Jakarta Servlet filter and a JDK {@code HttpServer} filter, client identity
 * (key resolvers, trusted proxies) and the standard rate-limit response headers.
 */
module dev.sluice.http {
  requires transitive dev.sluice.core;
  // The after-response refund rule and the words of reasons and paths, shared with every front end.
  requires dev.sluice.kernel;
  requires transitive jdk.httpserver;
  // Provided by the servlet container; only RateLimitServletFilter touches it.
  requires static transitive jakarta.servlet;

  exports dev.sluice.http;
  // What a servlet front end of Sluice's own needs and a user does not (the servlet request as the key
  // resolvers see it, a refusal written as its verdict): the Spring starter's filter and the servlet gateway's
  // (Spring Cloud Gateway Server MVC) only. Not API.
  exports dev.sluice.http.frontend to dev.sluice.spring.autoconfigure, dev.sluice.spring.gateway;
}

package dev.sluice.http;

import java.security.Principal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A request value for resolver unit tests (the filters are tested through real servers). */
final class FakeRequest implements RequestView {
  private final String remote;
  private final Map<String, List<String>> headers = new LinkedHashMap<>();
  private Principal principal;
  private String path = "/search";

  FakeRequest(String remote) {
    this.remote = remote;
  }

  FakeRequest header(String name, String value) {
    headers.computeIfAbsent(name.toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(value);
    return this;
  }

  FakeRequest principal(String name) {
    this.principal = () -> name;
    return this;
  }

  FakeRequest path(String path) {
    this.path = path;
    return this;
  }

  @Override public String remoteAddress() { return remote; }

  @Override public String header(String name) {
    List<String> v = headers(name);
    return v.isEmpty() ? null : v.get(0);
  }

  @Override public List<String> headers(String name) {
    return headers.getOrDefault(name.toLowerCase(Locale.ROOT), List.of());
  }

  @Override public Principal principal() { return principal; }

  @Override public String method() { return "GET"; }

  @Override public String path() { return path; }
}

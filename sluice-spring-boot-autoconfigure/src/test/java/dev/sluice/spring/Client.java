package dev.sluice.spring;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A real HTTP client on one test application's port. */
final class Client {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private static final ObjectMapper JSON = new ObjectMapper();
  private final int port;

  Client(int port) {
    this.port = port;
  }

  int port() {
    return port;
  }

  HttpResponse<String> get(String path, String... headers) {
    return send(HttpRequest.newBuilder(uri(path)).GET(), headers);
  }

  /**
   * An application's first request, allowed a minute: on a loaded 2-core machine a freshly started
   * application's first answer (class loading, its first store connection and script load) once took
   * longer than the 10 s every other request is allowed.
   */
  HttpResponse<String> warmUp(String path, String... headers) {
    return send(HttpRequest.newBuilder(uri(path)).GET().timeout(Duration.ofMinutes(1)), headers);
  }

  HttpResponse<String> post(String path, String... headers) {
    return send(HttpRequest.newBuilder(uri(path)).POST(HttpRequest.BodyPublishers.noBody()), headers);
  }

  JsonNode json(String path) {
    return json(get(path));
  }

  static JsonNode json(HttpResponse<String> r) {
    try {
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new UncheckedIOException("not JSON: " + r.body(), e);
    }
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static HttpResponse<String> send(HttpRequest.Builder b, String... headers) {
    if (headers.length > 0) {
      b.headers(headers);
    }
    try {
      HttpRequest r = b.build();
      return HTTP.send(r.timeout().isPresent() ? r : b.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

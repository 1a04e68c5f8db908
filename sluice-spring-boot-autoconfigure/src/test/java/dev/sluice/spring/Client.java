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
      return HTTP.send(b.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

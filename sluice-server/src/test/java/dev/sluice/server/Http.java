package dev.sluice.server;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A thin java.net.http client for the tests. */
final class Http {
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final URI base;

  Http(URI base) {
    this.base = base;
  }

  HttpResponse<String> post(String path, String body) {
    return send(HttpRequest.newBuilder(base.resolve(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)));
  }

  HttpResponse<String> get(String path) {
    return send(HttpRequest.newBuilder(base.resolve(path)).GET());
  }

  HttpResponse<String> send(HttpRequest.Builder b) {
    try {
      return CLIENT.send(b.timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

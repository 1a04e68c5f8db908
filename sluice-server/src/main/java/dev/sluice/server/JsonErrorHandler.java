package dev.sluice.server;

import java.io.IOException;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * Errors Jetty answers itself, before the API sees the request (a malformed request line, a bad
 * Content-Length, headers too large), in the API's JSON error shape instead of an HTML page, and
 * never with a stack trace.
 */
final class JsonErrorHandler extends ErrorHandler {
  JsonErrorHandler() {
    setShowStacks(false);
    setShowCauses(false);
    setShowMessageInTitle(false);
  }

  @Override protected void generateResponse(Request request, Response response, int code, String message, Throwable cause,
                                            Callback callback) throws IOException {
    String error = switch (code) {
      case 400 -> "bad_request";
      case 404 -> "not_found";
      case 405 -> "method_not_allowed";
      case 413 -> "payload_too_large";
      case 414 -> "uri_too_long";
      case 415 -> "unsupported_media_type";
      case 431 -> "headers_too_large";
      case 500 -> "internal";
      case 503 -> "unavailable";
      default -> "http_" + code;
    };
    String text = message == null || message.isBlank() ? "HTTP " + code : message;
    StringBuilder b = new StringBuilder(64).append("{\"error\":\"").append(error).append("\",\"message\":\"");
    for (int i = 0; i < text.length() && i < 200; i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(' ');
      } else {
        b.append(c);
      }
    }
    b.append("\"}");
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
    Content.Sink.write(response, true, b.toString(), callback);
  }
}

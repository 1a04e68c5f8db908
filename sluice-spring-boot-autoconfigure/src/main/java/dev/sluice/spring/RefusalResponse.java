package dev.sluice.spring;

import dev.sluice.http.HttpVerdict;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;

/**
 * An HTTP rule's answer to a refusal over a limit ({@code sluice.http.response}, a rule's
 * {@code response} over it field by field), applied to the {@link HttpVerdict}: the verdict decides
 * whether and why a request is refused and its {@code Retry-After} and limit headers are always
 * sent; this only replaces a 429's status, content type and body and adds headers. An outage (503)
 * is always the verdict's own answer. Without any field set the answer is the verdict's, RFC 9457.
 */
final class RefusalResponse {
  /** The verdict's answer, unchanged. */
  static final RefusalResponse VERDICT = new RefusalResponse(null, null, null, List.of());

  private final Integer status;
  private final String contentType;
  private final byte[] body;
  private final List<HttpVerdict.Header> extra;

  private RefusalResponse(Integer status, String contentType, byte[] body, List<HttpVerdict.Header> extra) {
    this.status = status;
    this.contentType = contentType;
    this.body = body;
    this.extra = extra;
  }

  /** {@code rule}'s fields over {@code global}'s; {@code where} names the rule in a message. */
  static RefusalResponse of(String where, SluiceProperties.Response rule, SluiceProperties.Response global) {
    SluiceProperties.Response r = rule == null ? new SluiceProperties.Response() : rule;
    SluiceProperties.Response g = global == null ? new SluiceProperties.Response() : global;
    if (!r.isSet() && !g.isSet()) {
      return VERDICT;
    }
    String at = r.isSet() ? where + ".response" : "sluice.http.response";
    Integer status = r.getStatus() != null ? r.getStatus() : g.getStatus();
    if (status != null && (status < 400 || status > 599)) {
      throw new IllegalArgumentException(at + ".status is " + status + "; a refusal answers a client or server error, 400 to 599");
    }
    String body = r.getBody() != null ? r.getBody() : g.getBody();
    String type = r.getContentType() != null ? r.getContentType() : g.getContentType();
    if (type != null) {
      try {
        MediaType.parseMediaType(type);
      } catch (InvalidMediaTypeException e) {
        throw new IllegalArgumentException(at + ".content-type '" + type + "' is not a media type: " + e.getMessage(), e);
      }
    } else if (body != null) {
      type = MediaType.TEXT_PLAIN_VALUE + ";charset=UTF-8";
    }
    List<HttpVerdict.Header> extra = new ArrayList<>();
    headers(at, g.getHeaders(), extra);
    headers(at, r.getHeaders(), extra);
    return new RefusalResponse(status, type, body == null ? null : body.getBytes(StandardCharsets.UTF_8), List.copyOf(extra));
  }

  private static void headers(String at, Map<String, String> headers, List<HttpVerdict.Header> into) {
    if (headers == null) {
      return;
    }
    for (Map.Entry<String, String> e : headers.entrySet()) {
      String name = e.getKey();
      if (name == null || name.isEmpty() || !name.chars().allMatch(RefusalResponse::tokenChar)) {
        throw new IllegalArgumentException(at + ".headers: '" + name + "' is not a header name (letters, digits and !#$%&'*+-.^_`|~)");
      }
      String value = e.getValue() == null ? "" : e.getValue();
      if (value.chars().anyMatch(c -> c == '\r' || c == '\n')) {
        throw new IllegalArgumentException(at + ".headers." + name + " holds a line break; a header value is one line");
      }
      into.removeIf(h -> h.name().equalsIgnoreCase(name)); // a rule's value replaces the global one
      into.add(new HttpVerdict.Header(name, value));
    }
  }

  private static boolean tokenChar(int c) {
    return c < 127 && (Character.isLetterOrDigit(c) || "!#$%&'*+-.^_`|~".indexOf(c) >= 0);
  }

  /** True when {@code verdict} (a refusal) is answered as the verdict renders it. */
  boolean isVerdicts(HttpVerdict verdict) {
    return this == VERDICT || verdict.status() != HttpVerdict.TOO_MANY_REQUESTS;
  }

  /** The status of the refusal {@code verdict}. */
  int status(HttpVerdict verdict) {
    return isVerdicts(verdict) || status == null ? verdict.status() : status;
  }

  /** The Content-Type of the refusal {@code verdict}. */
  String contentType(HttpVerdict verdict) {
    return isVerdicts(verdict) || contentType == null ? HttpVerdict.PROBLEM_JSON : contentType;
  }

  /** The body of the refusal {@code verdict}. */
  byte[] body(HttpVerdict verdict) {
    return isVerdicts(verdict) || body == null ? verdict.bodyBytes() : body;
  }

  /** The headers of the refusal {@code verdict}: its own, then the configured ones. */
  List<HttpVerdict.Header> headers(HttpVerdict verdict) {
    if (isVerdicts(verdict) || extra.isEmpty()) {
      return verdict.headers();
    }
    List<HttpVerdict.Header> all = new ArrayList<>(verdict.headers());
    all.addAll(extra);
    return all;
  }
}

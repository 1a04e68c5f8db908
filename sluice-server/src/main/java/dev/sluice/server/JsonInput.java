package dev.sluice.server;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.Policy;
import dev.sluice.server.ApiHandler.ApiError;
import dev.sluice.kernel.Inputs;
import java.io.IOException;
import java.util.Iterator;
import java.util.Set;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.Fields;

/**
 * The service's strict input rules, in one place for the public API and the admin API: a body is
 * JSON ({@code Content-Type: application/json}, else 415), at most {@link #MAX_BODY_BYTES} (413, with
 * what the client is still sending read and dropped so it reads the answer), one object with known
 * fields only, each once, no trailing tokens, numbers kept exact ({@code 1e30} permits is too large,
 * not a double); required fields and parameters named when missing; methods checked per route.
 */
final class JsonInput {
  /** The largest request body served. */
  static final int MAX_BODY_BYTES = 64 * 1024;
  /** Most bytes of an oversized body read and dropped before the 413; past that the connection just closes. */
  static final long MAX_DISCARD_BYTES = 1024 * 1024;
  static final String JSON = "application/json";
  /** Trailing tokens and a repeated field are errors; numbers keep their digits (1e30 is too large, not a double). */
  static final ObjectMapper MAPPER = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS).enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private JsonInput() {}

  /**
   * Why the request's body will be read only to be dropped, or null: not JSON (415), or declared
   * larger than {@link #MAX_BODY_BYTES} (413). The body is still read, so that the client, still
   * sending it, reads the answer on a connection that stays usable ({@link RequestBody}).
   */
  static ApiError refusal(Request request) {
    try {
      requireJson(request);
    } catch (ApiError e) {
      return e;
    }
    long declared = request.getLength();
    if (declared > MAX_BODY_BYTES) {
      return new ApiError(413, "payload_too_large", "request body of " + declared + " bytes exceeds " + MAX_BODY_BYTES + " bytes");
    }
    return null;
  }

  /** A whole request body as a JSON object of the given {@code fields} (400 otherwise). */
  static JsonNode parseObject(byte[] bytes, Set<String> fields, String usage) throws IOException {
    if (bytes.length == 0) {
      throw new ApiError(400, "bad_request", "request body is empty; send a JSON object (" + usage + ")");
    }
    String text = utf8(bytes);
    JsonNode node;
    try {
      node = MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String where = at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")";
      String message = e.getOriginalMessage();
      if (message != null && message.startsWith("Duplicate field '")) {
        String field = message.substring("Duplicate field '".length(), message.length() - 1);
        throw new ApiError(400, "bad_request", "field " + Inputs.quote(field) + " appears twice" + where + "; give each field once");
      }
      throw new ApiError(400, "bad_request", "request body is not valid JSON" + where + ": " + message);
    }
    if (node == null || !node.isObject()) {
      throw new ApiError(400, "bad_request", "request body must be a JSON object (" + usage + ")");
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!fields.contains(f)) {
        throw new ApiError(400, "bad_request", "unknown field " + Inputs.quote(f) + "; " + usage);
      }
    }
    return node;
  }

  /**
   * The body decoded as strict UTF-8 (RFC 8259 8.1): an overlong form ({@code C0 80} for NUL), an
   * encoded surrogate, a truncated sequence or a stray byte is a 400 naming its offset. Jackson alone
   * decoded {@code C0 80} as NUL, a key that then shared the real NUL key's budget.
   */
  static String utf8(byte[] bytes) {
    java.nio.charset.CharsetDecoder strict = java.nio.charset.StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT).onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT);
    java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(bytes);
    java.nio.CharBuffer out = java.nio.CharBuffer.allocate(bytes.length);
    java.nio.charset.CoderResult r = strict.decode(in, out, true);
    if (!r.isError()) {
      r = strict.flush(out);
    }
    if (r.isError()) {
      int at = in.position();
      StringBuilder seq = new StringBuilder();
      for (int i = at; i < Math.min(bytes.length, at + Math.max(1, r.length())); i++) {
        seq.append(seq.length() == 0 ? "" : " ").append(String.format("%02X", bytes[i] & 0xFF));
      }
      throw new ApiError(400, "bad_request", "request body is not valid UTF-8: bytes " + seq + " at offset " + at
          + " are not a well-formed UTF-8 sequence (overlong forms, surrogates and truncated sequences are refused); send JSON as UTF-8");
    }
    return out.flip().toString();
  }

  /**
   * A body the API reads is JSON: {@code Content-Type: application/json} (a charset, if named, is
   * UTF-8), else 415; a form post ({@code curl -d}) is refused before its body is parsed as JSON.
   */
  private static void requireJson(Request request) {
    String type = request.getHeaders().get(HttpHeader.CONTENT_TYPE);
    String[] parts = type == null ? new String[] {""} : type.split(";");
    boolean json = parts[0].strip().equalsIgnoreCase(JSON);
    for (int i = 1; i < parts.length && json; i++) {
      String param = parts[i].strip().toLowerCase(java.util.Locale.ROOT);
      if (param.startsWith("charset=")) {
        json = param.substring(8).replace("\"", "").equals("utf-8");
      }
    }
    if (!json) {
      throw new ApiError(415, "unsupported_media_type", (type == null ? "Content-Type is missing" : "Content-Type "
          + Inputs.quote(abbreviate(type)) + " is not supported") + "; send the body as JSON with Content-Type: application/json");
    }
  }

  /** A required string field. */
  static String requiredText(JsonNode body, String field) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) {
      throw new ApiError(400, "bad_request", field + " is missing");
    }
    if (!v.isTextual()) {
      throw new ApiError(400, "bad_request", field + " must be a JSON string, not " + abbreviate(v.toString()));
    }
    return v.textValue();
  }

  /** A required query parameter. */
  static String requiredParam(Fields q, String name) {
    String v = q.getValue(name);
    if (v == null) {
      throw new ApiError(400, "bad_request", "query parameter '" + name + "' is missing; use GET /v1/peek?policy=NAME&key=KEY");
    }
    return v;
  }

  /** 405 unless the method is {@code allowed}. */
  static void requireMethod(String method, String allowed) {
    if (!allowed.equals(method)) {
      throw new ApiError(405, allowed, method + " is not allowed here; use " + allowed);
    }
  }

  /** The {@code permits} field: 1 when absent, else a whole number from 1 to the policy's limit. */
  static long permits(JsonNode v, Policy p) {
    if (v == null) {
      return 1;
    }
    java.math.BigDecimal n = v.isNumber() ? v.decimalValue() : null;
    if (n == null || n.signum() != 0 && n.stripTrailingZeros().scale() > 0) {
      throw new ApiError(400, "bad_request", "permits " + abbreviate(v.toString())
          + " is not a whole number; give a whole number from 1 to " + p.limit() + ", or leave it out for 1");
    }
    if (n.compareTo(java.math.BigDecimal.valueOf(Long.MAX_VALUE)) > 0 || n.signum() < 1) {
      // A whole number no long holds (1e30, 2^64) is too large; zero and below are below 1.
      throw Inputs.permitsOutOfRange(abbreviate(v.toString()), n.signum() < 1, p.limit(), p.name());
    }
    return Inputs.permits(n.longValueExact(), p.limit(), p.name());
  }

  /** The {@code actual} field of a settlement: a whole number from 0 to the policy's limit. */
  static long actual(JsonNode v, Policy p) {
    java.math.BigDecimal n = v != null && v.isNumber() ? v.decimalValue() : null;
    if (n == null || n.signum() != 0 && n.stripTrailingZeros().scale() > 0) {
      throw new ApiError(400, "bad_request", "actual " + (v == null ? "is missing" : abbreviate(v.toString()) + " is not a whole number")
          + "; give the cost the work had, a whole number from 0 to " + p.limit());
    }
    if (n.compareTo(java.math.BigDecimal.valueOf(Long.MAX_VALUE)) > 0 || n.compareTo(java.math.BigDecimal.valueOf(Long.MIN_VALUE)) < 0) {
      // A whole number no long holds (2^64, 1e30) is too large (or, negative, below 0), as permits are.
      throw Inputs.actualOutOfRange(abbreviate(v.toString()), n.signum() < 0, p.limit(), p.name());
    }
    return Inputs.actual(n.longValueExact(), p.limit(), p.name());
  }

  static String abbreviate(String s) {
    return s.length() <= 40 ? s : s.substring(0, 40) + "...";
  }
}

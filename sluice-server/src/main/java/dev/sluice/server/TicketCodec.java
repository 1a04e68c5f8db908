package dev.sluice.server;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Refund tickets as opaque strings a client can hold but cannot forge or alter.
 *
 * <p>A ticket is {@code base64url(payload) "." base64url(HMAC-SHA256(secret, payload))}. The payload
 * names the signing key's id, the policy, the key, the permits, the stamp (the window or log entry
 * they were counted in) and when it was issued. The secret is the key id's in {@link TicketKeys}:
 * shared by every instance when configured, so that any instance verifies what another issued, else
 * drawn when the process starts (tickets then do not survive a restart: a refund is an
 * optimisation, a limiter without it is stricter, never weaker).
 */
final class TicketCodec {
  private static final byte VERSION = 2;
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
  private static final Base64.Decoder B64D = Base64.getUrlDecoder();
  /** Longest ticket accepted (no longer than a request body may be); refused before any work. */
  private static final int MAX_TICKET_CHARS = ApiHandler.MAX_BODY_BYTES;

  /** The decoded contents of a verified ticket; {@code mac} identifies it in the spent set. */
  record Claims(String policy, String key, long permits, long stamp, long issuedAtMicros, String mac) {}

  private final TicketKeys keys;
  private final byte[] signingId;
  private final Map<String, ThreadLocal<Mac>> macs = new HashMap<>();

  TicketCodec() {
    this(TicketKeys.random());
  }

  TicketCodec(TicketKeys keys) {
    this.keys = keys;
    this.signingId = keys.signingId().getBytes(StandardCharsets.US_ASCII);
    for (String id : keys.ids()) {
      SecretKeySpec secret = new SecretKeySpec(keys.secret(id), "HmacSHA256");
      macs.put(id, ThreadLocal.withInitial(() -> newMac(secret)));
    }
  }

  boolean shared() {
    return keys.shared();
  }

  String encode(String policy, String key, long permits, long stamp, long issuedAtMicros) {
    byte[] p = policy.getBytes(StandardCharsets.UTF_8);
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(1 + 1 + signingId.length + 8 + 8 + 8 + 2 + p.length + 4 + k.length);
    b.put(VERSION).put((byte) signingId.length).put(signingId).putLong(permits).putLong(stamp).putLong(issuedAtMicros)
        .putShort((short) p.length).put(p).putInt(k.length).put(k);
    byte[] payload = b.array();
    return B64.encodeToString(payload) + '.' + B64.encodeToString(macs.get(keys.signingId()).get().doFinal(payload));
  }

  /** Verifies and decodes {@code ticket}; an {@link IllegalArgumentException} says why it was rejected. */
  Claims decode(String ticket) {
    if (ticket == null || ticket.isBlank()) {
      throw new IllegalArgumentException("ticket is missing; pass the ticket string an allowed acquire returned");
    }
    if (ticket.length() > MAX_TICKET_CHARS) {
      throw new IllegalArgumentException("ticket is " + ticket.length() + " characters long; no ticket this server issues is over "
          + MAX_TICKET_CHARS);
    }
    int dot = ticket.indexOf('.');
    byte[] payload;
    byte[] mac;
    try {
      if (dot < 1 || dot != ticket.lastIndexOf('.')) {
        throw new IllegalArgumentException("no single '.'");
      }
      payload = B64D.decode(ticket.substring(0, dot));
      mac = B64D.decode(ticket.substring(dot + 1));
    } catch (IllegalArgumentException e) {
      throw malformed();
    }
    String id;
    ByteBuffer b = ByteBuffer.wrap(payload);
    try {
      if (b.get() != VERSION) {
        throw malformed();
      }
      byte[] kid = new byte[b.get()];
      b.get(kid);
      id = new String(kid, StandardCharsets.US_ASCII);
    } catch (RuntimeException e) {
      throw malformed();
    }
    ThreadLocal<Mac> m = macs.get(id);
    if (m == null || !MessageDigest.isEqual(mac, m.get().doFinal(payload))) {
      throw new IllegalArgumentException("ticket signature does not verify: the ticket was altered, or was signed with a key this"
          + " server does not hold (" + (keys.shared() ? "its keys are " + String.join(", ", keys.ids())
          : "no --ticket-keys: tickets refund only at the process that issued them, and do not survive a restart") + ")");
    }
    try {
      long permits = b.getLong();
      long stamp = b.getLong();
      long issuedAt = b.getLong();
      byte[] p = new byte[b.getShort()];
      b.get(p);
      byte[] k = new byte[b.getInt()];
      b.get(k);
      return new Claims(new String(p, StandardCharsets.UTF_8), new String(k, StandardCharsets.UTF_8), permits, stamp,
          issuedAt, ticket.substring(dot + 1));
    } catch (RuntimeException e) {
      throw malformed();
    }
  }

  private static IllegalArgumentException malformed() {
    return new IllegalArgumentException("ticket is malformed; pass the ticket string an allowed acquire returned, unchanged");
  }

  private static Mac newMac(SecretKeySpec secret) {
    try {
      Mac m = Mac.getInstance("HmacSHA256");
      m.init(secret);
      return m;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available in this JDK", e);
    }
  }
}

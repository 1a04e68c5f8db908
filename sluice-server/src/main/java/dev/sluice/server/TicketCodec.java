package dev.sluice.server;

import dev.sluice.kernel.Inputs;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Refund tickets as opaque strings a client can hold but cannot forge or alter.
 *
 * <p>A ticket is {@code base64url(payload) "." base64url(HMAC-SHA256(secret, payload))}, both parts
 * unpadded and decoded strictly: a part whose canonical encoding is not exactly its text (a trailing
 * {@code =}, other unused bits in the last character) is malformed, so a ticket has one spelling
 * (issue 26, finding 4). The payload names the signing key's id, the policy, the budget, the permits,
 * the stamp (the window or log entry they were counted in), when it was issued, and the ticket's
 * 128-bit id ({@link dev.sluice.Ticket#id()}): the identity the spent records are keyed by, here and in
 * the store. On a shared store the budget is the key's stored id
 * ({@link Inputs#storedId}, 32 bytes), so a ticket is under 200 characters whatever the key's length
 * (a 50,000-character key once made a ticket whose refund body exceeded the 64 KiB cap); on the
 * memory store, keyed by the raw key, it is the key itself, at most {@code --max-key-length}
 * ({@link #MAX_MEMORY_KEY_LENGTH}). The secret is the key id's in {@link TicketKeys}:
 * shared by every instance when configured, so that any instance verifies what another issued, else
 * drawn when the process starts (tickets then do not survive a restart: a refund is an
 * optimisation, a limiter without it is stricter, never weaker).
 */
final class TicketCodec {
  private static final byte VERSION = 4;
  private static final byte RAW_KEY = 0;
  private static final byte STORED_ID = 1;
  /**
   * Longest memory-store key whose ticket still fits a refund body: 3 UTF-8 bytes per UTF-16 code
   * unit at most, 4/3 of that in base64, with room for the rest of the payload and the JSON.
   */
  static final int MAX_MEMORY_KEY_LENGTH = 16_000;
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
  private static final Base64.Decoder B64D = Base64.getUrlDecoder();
  private static final HexFormat HEX = HexFormat.of();
  /** Longest ticket accepted (no longer than a request body may be); refused before any work. */
  private static final int MAX_TICKET_CHARS = JsonInput.MAX_BODY_BYTES;

  /**
   * The decoded contents of a verified ticket; {@code key} is the one to refund under (the raw key,
   * or on a shared store the {@link Inputs#storedIdKey} of its id); {@code ticketId} is its identity
   * ({@link dev.sluice.Ticket#id()}), which keys the spent records whatever the ticket's spelling.
   */
  record Claims(String policy, String key, long permits, long stamp, long issuedAtMicros, String ticketId) {}

  private final TicketKeys keys;
  private final byte[] signingId;
  /** True on a shared store: tickets carry the key's stored id, not the key. */
  private final boolean storedIds;
  private final Map<String, ThreadLocal<Mac>> macs = new HashMap<>();

  TicketCodec() {
    this(TicketKeys.random(), false);
  }

  TicketCodec(TicketKeys keys, boolean storedIds) {
    this.keys = keys;
    this.storedIds = storedIds;
    this.signingId = keys.signingId().getBytes(StandardCharsets.US_ASCII);
    for (String id : keys.ids()) {
      SecretKeySpec secret = new SecretKeySpec(keys.secret(id), "HmacSHA256");
      macs.put(id, ThreadLocal.withInitial(() -> newMac(secret)));
    }
  }

  boolean shared() {
    return keys.shared();
  }

  String encode(String policy, String key, long permits, long stamp, long issuedAtMicros, String ticketId) {
    byte[] p = policy.getBytes(StandardCharsets.UTF_8);
    byte[] k = storedIds ? HEX.parseHex(Inputs.storedId(policy, key)) : key.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(1 + 1 + signingId.length + 8 + 8 + 8 + 16 + 2 + p.length + 1 + 4 + k.length);
    b.put(VERSION).put((byte) signingId.length).put(signingId).putLong(permits).putLong(stamp).putLong(issuedAtMicros)
        .put(HEX.parseHex(ticketId)).putShort((short) p.length).put(p).put(storedIds ? STORED_ID : RAW_KEY).putInt(k.length).put(k);
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
      payload = strict(ticket.substring(0, dot));
      mac = strict(ticket.substring(dot + 1));
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
      byte[] tid = new byte[16];
      b.get(tid);
      byte[] p = new byte[b.getShort()];
      b.get(p);
      byte kind = b.get();
      byte[] k = new byte[b.getInt()];
      b.get(k);
      String key = switch (kind) {
        case RAW_KEY -> new String(k, StandardCharsets.UTF_8);
        case STORED_ID -> Inputs.storedIdKey(HEX.formatHex(k));
        default -> throw malformed();
      };
      if (b.hasRemaining()) {
        throw malformed();
      }
      return new Claims(new String(p, StandardCharsets.UTF_8), key, permits, stamp, issuedAt, HEX.formatHex(tid));
    } catch (RuntimeException e) {
      throw malformed();
    }
  }

  /**
   * Decodes one unpadded base64url part, refusing every spelling but the canonical one: Java's
   * decoder accepts a trailing {@code =} and ignores the unused low bits of the last character, so
   * one ticket had up to eight spellings, each of which verified (issue 26, finding 4).
   */
  private static byte[] strict(String part) {
    byte[] bytes = B64D.decode(part);
    if (!B64.encodeToString(bytes).equals(part)) {
      throw new IllegalArgumentException("not canonical base64url");
    }
    return bytes;
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

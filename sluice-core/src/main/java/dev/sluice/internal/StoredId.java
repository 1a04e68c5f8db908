package dev.sluice.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The identifiers shared stores write instead of raw policy names and keys: domain-separated SHA-256,
 * as 64 lowercase hex characters. Inputs are length-prefixed so that no two (policy, key) pairs can
 * produce the same preimage ("a" + "bc" vs "ab" + "c"), and tagged with a domain and version so the
 * ids of other uses of SHA-256 cannot collide with ours.
 *
 * <p>These ids are pseudonymous, not anonymous: anyone who can guess a key (an IP address, a user
 * id) can compute its id and link its activity within a policy.
 */
public final class StoredId {
  private static final byte[] POLICY_DOMAIN = "sluice/v1/policy".getBytes(StandardCharsets.UTF_8);
  private static final byte[] KEY_DOMAIN = "sluice/v1/key".getBytes(StandardCharsets.UTF_8);
  private static final HexFormat HEX = HexFormat.of();
  /**
   * The first character of a key that stands for its own id ({@link #standIn}): a lone low
   * surrogate, which {@link Checks#key} refuses in every key a caller passes, so no caller's key can
   * take this form and reach another key's budget.
   */
  private static final char STAND_IN = '\uDC00';
  private static final int ID_CHARS = 64;

  private StoredId() {}

  /** The id of a policy's partition: {@code SHA-256("sluice/v1/policy" | len | name)}. */
  public static String policy(String policyName) {
    MessageDigest md = sha256();
    md.update(POLICY_DOMAIN);
    field(md, policyName);
    return HEX.formatHex(md.digest());
  }

  /**
   * The id of one key under one policy: {@code SHA-256("sluice/v1/key" | len | name | len | key)};
   * for a {@link #standIn} key, the id it stands for.
   */
  public static String key(String policyName, String key) {
    if (key.length() == ID_CHARS + 1 && key.charAt(0) == STAND_IN) {
      return key.substring(1);
    }
    MessageDigest md = sha256();
    md.update(KEY_DOMAIN);
    field(md, policyName);
    field(md, key);
    return HEX.formatHex(md.digest());
  }

  /**
   * A key that shared stores resolve to {@code keyId} itself ({@link #key} returns it), for a caller
   * that kept a budget's id instead of its key: the rate-limit service's refund tickets carry the id
   * (32 bytes whatever the key's length) and refund through this stand-in. Only a ticket's key
   * takes this form (every key a caller passes goes through {@link Checks#key}, which refuses it);
   * the memory tier, keyed by the raw key, finds no budget under it.
   */
  public static String standIn(String keyId) {
    if (keyId == null || keyId.length() != ID_CHARS || !keyId.chars().allMatch(c -> c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
      throw new IllegalArgumentException("key id " + keyId + " is not 64 lowercase hex characters (a StoredId)");
    }
    return STAND_IN + keyId;
  }

  private static void field(MessageDigest md, String value) {
    byte[] b = value.getBytes(StandardCharsets.UTF_8);
    int n = b.length;
    md.update(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
    md.update(b);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every Java platform", e);
    }
  }
}

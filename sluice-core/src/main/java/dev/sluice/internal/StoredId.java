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

  private StoredId() {}

  /** The id of a policy's partition: {@code SHA-256("sluice/v1/policy" | len | name)}. */
  public static String policy(String policyName) {
    MessageDigest md = sha256();
    md.update(POLICY_DOMAIN);
    field(md, policyName);
    return HEX.formatHex(md.digest());
  }

  /** The id of one key under one policy: {@code SHA-256("sluice/v1/key" | len | name | len | key)}. */
  public static String key(String policyName, String key) {
    MessageDigest md = sha256();
    md.update(KEY_DOMAIN);
    field(md, policyName);
    field(md, key);
    return HEX.formatHex(md.digest());
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

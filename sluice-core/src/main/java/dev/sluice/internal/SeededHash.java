package dev.sluice.internal;

/**
 * The slot hash of the hashed-slot structures (memory tier and keyed composition): 64-bit FNV-1a over
 * the key's UTF-16 code units, started from a per-instance random seed, then murmur3's finalizer.
 * Fast and well distributed; an attacker who does not know the seed cannot precompute collisions
 * against a victim's slot, though it is not a cryptographic PRF.
 */
public final class SeededHash {
  private SeededHash() {}

  /** The slot of {@code key} among {@code slots}, for this {@code seed}. */
  public static int slot(long seed, String key, int slots) {
    long h = seed ^ 0xcbf29ce484222325L;
    for (int i = 0, n = key.length(); i < n; i++) {
      h ^= key.charAt(i);
      h *= 0x100000001b3L;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return (int) Long.remainderUnsigned(h, slots);
  }
}

package dev.sluice.spi;

/**
 * One record of a {@link VersionedStore}, as read or listed: its id within its partition, its value,
 * its version and its expiry (epoch microseconds). A plain carrier: it does not validate, because a
 * store reports what it holds, and the limiter is the one that decides whether that is well formed
 * (a malformed record is refused with {@code Reason.CORRUPT_STATE}, never trusted).
 */
public record StoredRecord(String id, String value, long version, long expiresAtMicros) {}

package dev.sluice.spi;

import java.util.List;

/**
 * A small versioned key-value store: the one seam a database must provide for Sluice's durable tier.
 * The algorithm never lives here: {@code dev.sluice.store.VersionedStoreRateLimiter} runs the
 * reference model client-side and only asks the store to read a record and to write it back if
 * nobody changed it in between. Any store that can do an atomic compare-and-set on one record
 * (a SQL {@code UPDATE ... WHERE version = ?}, a DynamoDB conditional put, an etcd transaction)
 * can back it.
 *
 * <h2>Records and versions</h2>
 * A record lives under an {@code id} inside a {@code partition}. Both are 64 lowercase hex characters
 * (hashes from {@code dev.sluice.internal.StoredId}: the partition is one policy, the id one key under
 * it; the raw key is never passed to a store). A record holds:
 * <ul>
 *   <li>a {@code value}: printable ASCII (0x20..0x7e), 1 to {@link #MAX_VALUE_LENGTH} characters,
 *       stored and returned byte for byte;
 *   <li>a {@code version}: a positive {@code long} chosen by the caller on every write. The store
 *       keeps it and compares it; it never invents, increments or reuses one on its own;
 *   <li>an {@code expiresAtMicros}: epoch microseconds (of the caller's ticker) after which the record
 *       no longer matters. A store keeps and returns it; see {@link #compareAndSet} for what it may do
 *       with it.
 * </ul>
 * {@link #ABSENT} (0) is the version of a record that does not exist.
 *
 * <h2>Atomicity</h2>
 * Each method is atomic on its one record: {@link #compareAndSet} and {@link #deleteIfVersion}
 * compare and change in one indivisible step, so of two writers that read the same version exactly
 * one succeeds. Nothing spans two records; no transaction is needed.
 *
 * <h2>Deadlines, timeouts and failures</h2>
 * Every method receives a {@code deadlineNanos}, an instant on the {@link System#nanoTime()} scale.
 * A store must not let a call wait past it by more than its client's timer granularity: it sets its
 * client's timeout from {@code deadlineNanos - System.nanoTime()} (a JDBC network or query timeout, an
 * HTTP request timeout) and, when that passes, throws {@link StoreTimeoutException}. Any other failure
 * (connection refused, an error answer, an I/O error) is thrown as a {@link StoreException}; the
 * limiter turns both into a decision under its failure mode and never lets them reach its caller.
 * A store must never turn an unknown outcome into an answer: a write whose result it did not see
 * (the timeout struck after the request was sent) is a {@link StoreTimeoutException}, not {@code true}
 * and not {@code false}. Such a write may still land later; because it is conditional on the version,
 * that can only make the limiter stricter (permits counted that the caller was told were refused).
 * A call whose deadline has already passed may be refused at once with a {@link StoreTimeoutException}.
 *
 * <h2>Thread safety</h2>
 * Implementations are called by many threads at once and must be thread-safe.
 *
 * <p>The conformance kit's {@code dev.sluice.tck.VersionedStoreContract} checks all of this against
 * a real instance of a store; {@code docs/stores.md} shows a complete JDBC store in under a hundred lines.
 */
public interface VersionedStore {

  /** The version of a record that does not exist: {@code compareAndSet(..., ABSENT, ...)} creates. */
  long ABSENT = 0;

  /** The longest value a store must hold, in characters (printable ASCII, so also in bytes). */
  int MAX_VALUE_LENGTH = 255;

  /**
   * Reads one record.
   *
   * <p>Returns the record exactly as last written (value, version, expiry; its {@link StoredRecord#id()}
   * is {@code id}), or {@code null} when there is none. A store may return {@code null} for a record
   * past its expiry only if it also removed it (see {@link #compareAndSet}). The read must see every
   * write that completed before it was issued (read-your-writes across all clients of the store): a
   * stale read only costs a retry, but a store that never shows a completed write livelocks the limiter.
   *
   * @throws StoreTimeoutException when {@code deadlineNanos} passed before the answer arrived
   * @throws StoreException on any other failure
   */
  StoredRecord read(String partition, String id, long deadlineNanos);

  /**
   * Writes {@code value}, {@code newVersion} and {@code expiresAtMicros} under {@code id} if and only if
   * the record's current version is {@code expectedVersion}; with {@code expectedVersion ==}
   * {@link #ABSENT}, only if no record exists (an expired record that is still stored exists).
   * Compare and write are one atomic step.
   *
   * <p>Returns {@code true} when written, {@code false} when the current version differed (a conflict:
   * the caller re-reads and retries). {@code newVersion} is positive and differs from
   * {@code expectedVersion}.
   *
   * <p><b>Expiry.</b> A store may remove a record on its own (a TTL) once its {@code expiresAtMicros} has
   * passed on a clock that is never ahead of the callers' tickers; a store that cannot promise that
   * must not expire records itself and leaves removal to the limiter's {@code sweep()}. Removing a
   * record early resets a key's limit.
   *
   * <p><b>Timeout.</b> When the deadline passes after the write may have been sent, throw
   * {@link StoreTimeoutException}: never report {@code true} or {@code false} for an outcome you did not see.
   *
   * @throws StoreTimeoutException when {@code deadlineNanos} passed (the write may or may not have happened)
   * @throws StoreException on any other failure (the write may or may not have happened)
   */
  boolean compareAndSet(String partition, String id, long expectedVersion, String value, long newVersion,
                        long expiresAtMicros, long deadlineNanos);

  /**
   * Lists one partition, a page at a time: the records whose id is greater than {@code afterId}
   * ({@code null}: from the start), in ascending id order (ids are lowercase hex, so byte order),
   * at most {@code limit} of them. Fewer than {@code limit} records means the partition ends there.
   * Records written or deleted while a listing runs may or may not appear; every record that existed
   * throughout the listing appears exactly once across the pages.
   *
   * <p>A listed record carries the same value, version and expiry a {@link #read} at that moment would.
   *
   * @throws StoreTimeoutException when {@code deadlineNanos} passed
   * @throws StoreException on any other failure
   */
  List<StoredRecord> list(String partition, String afterId, int limit, long deadlineNanos);

  /**
   * Deletes one record if and only if its current version is {@code expectedVersion}, the version a
   * {@link #read} or {@link #list} returned (whatever it is: a reset must be able to remove a record
   * someone else wrote with a version Sluice would never write); compare and delete are one atomic
   * step. Returns {@code true} when deleted, {@code false} when there was no record or its version
   * differed.
   *
   * <p><b>Timeout.</b> As for {@link #compareAndSet}: an unseen outcome is a {@link StoreTimeoutException}.
   *
   * @throws StoreTimeoutException when {@code deadlineNanos} passed (the delete may or may not have happened)
   * @throws StoreException on any other failure
   */
  boolean deleteIfVersion(String partition, String id, long expectedVersion, long deadlineNanos);
}

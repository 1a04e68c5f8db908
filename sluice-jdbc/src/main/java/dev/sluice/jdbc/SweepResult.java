package dev.sluice.jdbc;

/**
 * What one {@link JdbcRateLimiter#sweep()} did.
 *
 * @param deleted      expired rows deleted
 * @param keptMalformed expired rows kept because their state is not what Sluice writes; checks
 *                      against them fail closed with {@link dev.sluice.Reason#CORRUPT_STATE} until
 *                      someone inspects them (or {@code reset}s the key)
 * @param keptChanged  expired rows kept because a decision wrote them between the sweep's read and
 *                      its delete (their version changed)
 * @param batches      batches the sweep ran
 */
public record SweepResult(long deleted, long keptMalformed, long keptChanged, int batches) {
}

package dev.sluice.store;

import java.util.List;

/**
 * What one sweep did: {@link VersionedStoreRateLimiter#sweep} (one policy's partition) and
 * {@code JdbcRateLimiter.sweep} (the table) report the same fields.
 *
 * @param scanned      records the sweep looked at: the versioned-store sweep lists the whole partition;
 *                     PostgreSQL's reads only rows already past their stored expiry
 * @param deleted      expired, well-formed records deleted
 * @param live         well-formed records that still matter, kept (always 0 on PostgreSQL, whose sweep
 *                     never reads them)
 * @param changed      expired records written or deleted by a decision between the sweep's read and its
 *                     delete, kept: the decision wins
 * @param malformed    records that are not what Sluice writes, kept: checks against them fail closed with
 *                     {@code CORRUPT_STATE} until the key is reset
 * @param malformedIds the ids of the first malformed records (at most {@value #MAX_NAMED}), for an
 *                     operator to inspect
 */
public record SweepResult(long scanned, long deleted, long live, long changed, long malformed, List<String> malformedIds) {
  /** At most this many malformed records are named in {@link #malformedIds}. */
  public static final int MAX_NAMED = 100;

  public SweepResult {
    malformedIds = List.copyOf(malformedIds.size() > MAX_NAMED ? malformedIds.subList(0, MAX_NAMED) : malformedIds);
  }
}

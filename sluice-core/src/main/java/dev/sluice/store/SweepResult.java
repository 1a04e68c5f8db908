package dev.sluice.store;

import java.util.List;

/**
 * What one {@link VersionedStoreRateLimiter#sweep} did to one policy's partition.
 *
 * @param policy       the policy name swept
 * @param scanned      records listed
 * @param deleted      expired, well-formed records deleted
 * @param live         well-formed records that still matter, kept
 * @param changed      expired records written or deleted by someone else between listing and deleting, kept
 * @param malformed    records that are not what Sluice writes, kept: checks against them fail closed with
 *                     {@code CORRUPT_STATE} until the key is reset
 * @param malformedIds the ids of the first malformed records (at most 100), for an operator to inspect
 */
public record SweepResult(String policy, long scanned, long deleted, long live, long changed, long malformed,
                          List<String> malformedIds) {
  public SweepResult {
    malformedIds = List.copyOf(malformedIds);
  }
}

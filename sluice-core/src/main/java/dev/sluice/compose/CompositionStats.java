package dev.sluice.compose;

import java.util.OptionalLong;

/**
 * A snapshot of a {@link Composition}'s counters.
 *
 * @param legs        legs per decision (limiters given, or leg factories of a keyed composition)
 * @param keyed       true for a keyed composition (hashed slots)
 * @param slots       the slot table's size; 0 when not keyed
 * @param builtSlots  slots whose limiter set has been built; {@code builtSlots / slots} is the occupancy
 * @param available   permits available now at the stats key; <b>absent</b> (not zero) when keyed, and
 *                    when no stats key was configured: a snapshot has no key to measure, and one
 *                    arbitrary tenant's allowance reported as the composition's would be believed wrongly
 * @param decisions   composed acquire decisions so far
 * @param refusals    of which refused
 * @param rejectionRate {@code refusals / decisions}, 0 before the first decision
 * @param legErrors   legs that threw; non-zero means the limiter is broken, not busy
 * @param compensations refunds issued to undo a charge on a leg when another leg refused
 * @param failedCompensations of which failed: those legs stay stricter (never weaker) until their window rolls
 * @param sharedFailures decisions for which the shared state could not answer (the degrade policy decided)
 */
public record CompositionStats(int legs, boolean keyed, int slots, int builtSlots, OptionalLong available,
                               long decisions, long refusals, double rejectionRate, long legErrors,
                               long compensations, long failedCompensations, long sharedFailures) {}

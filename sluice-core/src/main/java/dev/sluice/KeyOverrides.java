package dev.sluice;

import java.util.Optional;

/**
 * Per-key overrides of a policy, kept where the limiter keeps its counts: a tenant on another plan,
 * an abusive client held to less, a partner given more, changed while the system runs.
 *
 * <p>{@link #override(String, Policy) override(key, policy)} makes {@code policy} decide every
 * check of {@code key} under {@code policy.name()}, whatever policy the caller passes, on every
 * instance that shares the store, until {@link #clearOverride cleared}. A budget is its policy's
 * name and its key, so an override with the same algorithm keeps the count: a lowered limit
 * refuses at the next check when the key is over it, a raised one admits more at once, and
 * clearing returns the key to the caller's policy with the count kept. An override with another
 * algorithm keeps a state of another shape: the key starts afresh under it (and again when it is
 * cleared). Permits are checked against the caller's policy: to ask for more than it allows, pass
 * the override's policy. Decisions report the policy that decided ({@link Decision#policy()},
 * {@link Decision#limit()}).
 *
 * <p>Overrides are configuration, not state: the store keeps them until they are cleared (they never
 * expire with the count, and a sweep never removes them). Every Sluice limiter with a store
 * implements this (the memory tier, Redis, PostgreSQL, the compare-and-set engine over any versioned
 * store, Hazelcast); the conformance kit runs the same cases on each. Administrative calls: a store
 * failure is thrown ({@link dev.sluice.spi.StoreException}), never turned into a decision.
 */
public interface KeyOverrides {

  /**
   * Pins {@code policy} as the configuration of {@code key} under {@code policy.name()}: from the
   * next check on, on every instance, until {@link #clearOverride}. Setting it again replaces it.
   *
   * @throws IllegalArgumentException a key the limiter refuses, a null policy, or an algorithm the
   *     store does not run (the message names the value and the rule); nothing is changed
   */
  void override(String key, Policy policy);

  /**
   * Removes the override of {@code key} under {@code policy.name()}: the caller's policy decides it
   * again, with the count kept when the algorithm is the same. Returns whether there was one.
   */
  boolean clearOverride(String key, Policy policy);

  /** The override of {@code key} under {@code policy.name()}, if it has one. */
  Optional<Policy> overrideOf(String key, Policy policy);
}

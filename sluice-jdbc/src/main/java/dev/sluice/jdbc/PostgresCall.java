package dev.sluice.jdbc;

import dev.sluice.Policy;
import dev.sluice.jdbc.internal.ConnectionWait;

/** One call's inputs, read on the caller's thread and handed to the worker that runs its statements. */
final class PostgresCall {
  enum Op { ACQUIRE, BATCH, PEEK, REFUND, OVERRUN, RESET, ADMIN }

  final Op op;
  final Policy policy;
  final String key;
  final long permits;
  /** {@link PostgresRow#code} of the policy's algorithm. */
  final int alg;
  /** The tenant ({@code ""} outside tenant mode). */
  final String tenant;
  /** The {@link System#nanoTime()} instant by which the caller is answered. */
  final long deadline;
  /** The ticker's reading, epoch microseconds; unused (0) when the server's clock decides. */
  long now;
  boolean invalidClock;
  /** A coalesced batch's permits, in arrival order ({@code Op.BATCH}; {@code permits} is their smallest). */
  long[] batch;
  /** The worker's wait for a connection, abandoned when the caller is answered without it. */
  final ConnectionWait connectionWait = new ConnectionWait();

  PostgresCall(Op op, Policy policy, String key, long permits, int alg, String tenant, long deadline) {
    this.op = op;
    this.policy = policy;
    this.key = key;
    this.permits = permits;
    this.alg = alg;
    this.tenant = tenant;
    this.deadline = deadline;
  }
}

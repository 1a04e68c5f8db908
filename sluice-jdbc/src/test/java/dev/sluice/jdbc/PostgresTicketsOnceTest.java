package dev.sluice.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Policy;
import dev.sluice.Refund;
import dev.sluice.Settlement;
import dev.sluice.Ticket;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 26, finding 3, on PostgreSQL: with the limiter's table locked by another session past the
 * deadline, a refund or settle was answered FAILED, then applied when the lock went, and a retry
 * applied it again (refund 200 to 100 to 0; settle 110 to 20). Now the statement records the ticket
 * as spent (a row beside the budget's) in the same statement that applies it: the answer is UNKNOWN
 * and a retry, of the same ticket or one rebuilt from its parts, changes nothing. The lock is held on
 * this class's own table on the shared server, by a session of this test.
 */
class PostgresTicketsOnceTest {
  @RegisterExtension static final PostgresTable db = new PostgresTable(4);

  private Ticket.Issuer issuer;
  private JdbcRateLimiter limiter;
  private Policy policy;

  @BeforeEach void build() {
    issuer = new Ticket.Issuer();
    policy = Policy.fixedWindow("once-" + UUID.randomUUID().toString().substring(0, 8), 500, Duration.ofMinutes(10));
    limiter = JdbcRateLimiter.builder(policy, db.ds()).table(db.table()).timeout(Duration.ofMillis(300)).issuer(issuer).build();
  }

  private Ticket rebuilt(Ticket t) {
    return issuer.restore(t.policy(), t.key(), t.permits(), t.stamp(), t.id());
  }

  /** Runs {@code spend} while another session holds an exclusive lock on the table, then lets the lock go. */
  private <T> T underATableLock(java.util.function.Supplier<T> spend) throws Exception {
    try (Connection locker = java.sql.DriverManager.getConnection(PostgresTestSupport.URL)) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("LOCK TABLE " + db.table() + " IN ACCESS EXCLUSIVE MODE");
      }
      try {
        return spend.get();
      } finally {
        locker.rollback();
      }
    }
  }

  @Test
  void aRefundAnsweredFailedUnderATableLockWasAppliedAndItsRetryAppliedItAgain() throws Exception {
    Ticket t = limiter.tryAcquire("k", 200).ticket().orElseThrow();
    limiter.tryAcquire("k", 100);
    assertThat(limiter.peek("k").remaining()).isEqualTo(200);

    Refund first = underATableLock(() -> limiter.refund(t));
    assertThat(first).as("the statement waited on the lock past the deadline").isEqualTo(Refund.UNKNOWN);
    awaitRemaining(() -> limiter.peek("k").remaining(), 400); // it ran once the lock went

    assertThat(limiter.refund(t)).isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.refund(rebuilt(t))).isEqualTo(Refund.NO_EFFECT);
    assertThat(limiter.peek("k").remaining()).as("the budget changed exactly once").isEqualTo(400);
  }

  @Test
  void aSettleAnsweredFailedUnderATableLockWasAppliedAndItsRetryAppliedItAgain() throws Exception {
    Ticket under = limiter.tryAcquire("k", 110).ticket().orElseThrow();
    Ticket over = limiter.tryAcquire("k", 100).ticket().orElseThrow();
    assertThat(limiter.peek("k").remaining()).isEqualTo(290);

    Settlement s1 = underATableLock(() -> limiter.settle(under, 20));   // 90 back
    Settlement s2 = underATableLock(() -> limiter.settle(over, 250));   // 150 more
    assertThat(s1).isEqualTo(Settlement.UNKNOWN);
    assertThat(s2).isEqualTo(Settlement.UNKNOWN);
    awaitRemaining(() -> limiter.peek("k").remaining(), 290 + 90 - 150);

    for (int retry = 0; retry < 2; retry++) {
      assertThat(limiter.settle(rebuilt(under), 20)).isEqualTo(Settlement.NO_EFFECT);
      assertThat(limiter.settle(rebuilt(over), 250)).isEqualTo(Settlement.NO_EFFECT);
      assertThat(limiter.refund(rebuilt(over))).isEqualTo(Refund.NO_EFFECT);
    }
    assertThat(limiter.peek("k").remaining()).as("each settled exactly once").isEqualTo(230);
  }

  /** The spent rows expire with the ticket's life, and the sweep deletes them as any expired row (not as malformed). */
  @Test
  void aSpentTicketsRowIsSweptAfterTheTicketsLife() throws Exception {
    Policy shortLived = Policy.fixedWindow("swept-" + UUID.randomUUID().toString().substring(0, 8), 5, Duration.ofMillis(50));
    JdbcRateLimiter l = JdbcRateLimiter.builder(shortLived, db.ds()).table(db.table()).build();
    Ticket t = l.tryAcquire("k").ticket().orElseThrow();
    assertThat(l.refund(t)).isEqualTo(Refund.APPLIED);
    assertThat(spentRows()).isPositive();
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    dev.sluice.store.SweepResult r = l.sweep();
    while (spentRowsOf(t) > 0 && System.nanoTime() < deadline) {
      Thread.sleep(20);
      r = l.sweep();
    }
    assertThat(spentRowsOf(t)).isZero();
    assertThat(r.malformed()).isZero();
  }

  private static long spentRows() throws Exception {
    return count("SELECT count(*) FROM " + db.table() + " WHERE alg = 0");
  }

  private static long spentRowsOf(Ticket t) throws Exception {
    return count("SELECT count(*) FROM " + db.table() + " WHERE key_id LIKE '%:t:" + t.id() + "'");
  }

  private static long count(String sql) throws Exception {
    try (Connection c = db.ds().getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void awaitRemaining(LongSupplier remaining, long expected) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    long seen = remaining.getAsLong();
    while (seen != expected && System.nanoTime() < deadline) {
      Thread.sleep(10);
      seen = remaining.getAsLong();
    }
    assertThat(seen).isEqualTo(expected);
  }
}

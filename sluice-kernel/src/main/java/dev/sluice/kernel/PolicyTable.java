package dev.sluice.kernel;

import dev.sluice.Policy;
import dev.sluice.RateLimitListener;
import dev.sluice.RateLimiter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The policies in force and their limiters, by policy name, replaced whole by {@link #reload} and
 * read without a lock. A budget is its policy's name and the key, so a reload keeps every count: a
 * policy whose name stays keeps its limiter (other numbers apply at the key's next hit, as a per-call
 * override does), a new name gets a limiter of the store, a dropped one is no longer served.
 *
 * <p>Each name carries what the front end keeps for it beside the limiter (its meters, its counters),
 * made once by {@code attach} when the name first appears and kept across reloads, and the listener
 * its limiter reports to is chosen from that.
 *
 * @param <A> what the front end keeps per policy name
 */
public final class PolicyTable<A> {
  /** One policy in force: its current numbers, its limiter, and what the front end keeps for it. */
  public record Entry<A>(Policy policy, RateLimiter limiter, A attachment) {}

  /** What a {@link #reload} changed, by policy name, in the order of the policies. */
  public record Change(List<String> changed, List<String> added, List<String> removed) {
    public Change {
      changed = List.copyOf(changed);
      added = List.copyOf(added);
      removed = List.copyOf(removed);
    }

    /** {@code changed: a; added: none; removed: b, c}. */
    @Override public String toString() {
      return "changed: " + names(changed) + "; added: " + names(added) + "; removed: " + names(removed);
    }

    private static String names(List<String> names) {
      return names.isEmpty() ? "none" : String.join(", ", names);
    }
  }

  private final Store store;
  private final Function<Policy, A> attach;
  private final Function<A, RateLimitListener> listener;
  private volatile Map<String, Entry<A>> entries = Map.of();
  private volatile List<Policy> policies = List.of();

  /**
   * A table of {@code store}'s limiters for {@code policies}; {@code attach} makes what the front end
   * keeps for a new name, {@code listener} the listener its limiter reports to.
   */
  public PolicyTable(Store store, List<Policy> policies, Function<Policy, A> attach,
      Function<A, RateLimitListener> listener) {
    this.store = store;
    this.attach = attach;
    this.listener = listener;
    reload(policies);
  }

  /**
   * Puts {@code policies} in force (the store checks them first: nothing changes when one is refused)
   * and says what changed.
   */
  public synchronized Change reload(List<Policy> policies) {
    store.check(policies);
    Map<String, Entry<A>> old = entries;
    Map<String, Entry<A>> m = new LinkedHashMap<>();
    List<String> added = new ArrayList<>();
    List<String> changed = new ArrayList<>();
    for (Policy p : policies) {
      Entry<A> was = old.get(p.name());
      if (was != null) {
        if (!was.policy().equals(p)) {
          changed.add(p.name());
        }
        m.put(p.name(), new Entry<>(p, was.limiter(), was.attachment()));
      } else {
        A a = attach.apply(p);
        m.put(p.name(), new Entry<>(p, store.limiter(p, listener.apply(a)), a));
        added.add(p.name());
      }
    }
    List<String> removed = old.keySet().stream().filter(n -> !m.containsKey(n)).toList();
    this.policies = List.copyOf(policies);
    this.entries = Collections.unmodifiableMap(m);
    return new Change(changed, added, removed);
  }

  /** The entry of policy {@code name}, or null when none is in force. */
  public Entry<A> entry(String name) {
    return name == null ? null : entries.get(name);
  }

  /** Every entry by policy name, in the order of the policies; a snapshot a reload does not change. */
  public Map<String, Entry<A>> entries() {
    return entries;
  }

  /** The policies in force, in their order. */
  public List<Policy> policies() {
    return policies;
  }

  /** The store the limiters are of. */
  public Store store() {
    return store;
  }
}

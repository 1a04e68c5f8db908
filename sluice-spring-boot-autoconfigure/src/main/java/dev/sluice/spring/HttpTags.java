package dev.sluice.spring;

import dev.sluice.Decision;
import dev.sluice.kernel.BoundedValues;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * {@code sluice.http.metrics.tags}: the counter {@code sluice.http.requests} (tags {@code policy},
 * {@code outcome} and each configured tag) of the requests the rules decided. A tag's value is a
 * SpEL expression over the request (the conditions' root); its distinct values are capped: past
 * {@code max-values}, every new value is counted under {@code _other} (as Envoy mode caps its stat
 * keys), so that clients cannot grow the registry without end. A value that is null or blank, or an
 * expression that fails, is {@code none}. Sluice never tags by key: a tag is for a bounded property
 * of a request (a plan, a route, a tenant).
 */
final class HttpTags {
  static final String OTHER = BoundedValues.OTHER;
  static final String NONE = "none";
  static final int DEFAULT_MAX_VALUES = 100;
  static final int MOST_MAX_VALUES = 10_000;
  private static final System.Logger LOG = System.getLogger(HttpTags.class.getName());

  private final MeterRegistry registry;
  private final List<Tag> tags;
  private final BeanFactoryResolver beans;

  private HttpTags(MeterRegistry registry, List<Tag> tags, BeanFactory beans) {
    this.registry = registry;
    this.tags = tags;
    this.beans = new BeanFactoryResolver(beans);
  }

  /** The tags of {@code configured}, or null when there are none; {@code registry} null: checked, never recorded. */
  static HttpTags of(List<SluiceProperties.MetricTag> configured, MeterRegistry registry, BeanFactory beans) {
    if (configured == null || configured.isEmpty()) {
      return null;
    }
    SpelExpressionParser parser = new SpelExpressionParser();
    List<Tag> tags = new ArrayList<>();
    Set<String> names = new HashSet<>(List.of("policy", "outcome"));
    for (int i = 0; i < configured.size(); i++) {
      String at = "sluice.http.metrics.tags[" + i + "]";
      SluiceProperties.MetricTag t = configured.get(i);
      String name = t.getName() == null ? "" : t.getName().strip();
      if (name.isEmpty()) {
        throw new IllegalArgumentException(at + ".name is missing; give the tag's name, such as plan");
      }
      if (!names.add(name.toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException(at + ".name '" + name + "' is taken (policy, outcome and the tags before it); give another");
      }
      if (t.getExpression() == null || t.getExpression().isBlank()) {
        throw new IllegalArgumentException(at + ".expression is missing; give SpEL over the request, such as header('X-Plan')");
      }
      Expression e;
      try {
        e = parser.parseExpression(t.getExpression());
      } catch (ParseException ex) {
        throw new IllegalArgumentException(at + ".expression '" + t.getExpression() + "' is not a SpEL expression: " + ex.getMessage(), ex);
      }
      if (t.getMaxValues() < 1 || t.getMaxValues() > MOST_MAX_VALUES) {
        throw new IllegalArgumentException(at + ".max-values is " + t.getMaxValues() + "; give 1 to " + MOST_MAX_VALUES
            + " (past it new values are counted as " + OTHER + ")");
      }
      tags.add(new Tag(at, name, e, t.getMaxValues()));
    }
    if (registry == null) {
      LOG.log(System.Logger.Level.WARNING, "sluice.http.metrics.tags are configured but the application has no MeterRegistry "
          + "(add spring-boot-starter-actuator); sluice.http.requests is not recorded");
    }
    return new HttpTags(registry, List.copyOf(tags), beans);
  }

  /** Counts one decided request: {@code decision}'s policy and outcome, and each tag's bounded value on {@code request}. */
  void record(Decision decision, RuleRequest request) {
    if (registry == null) {
      return;
    }
    String[] kv = new String[4 + 2 * tags.size()];
    kv[0] = "policy";
    kv[1] = decision.policy().name();
    kv[2] = "outcome";
    kv[3] = decision.allowed() ? "allowed" : "refused";
    for (int i = 0; i < tags.size(); i++) {
      Tag t = tags.get(i);
      kv[4 + 2 * i] = t.name;
      kv[5 + 2 * i] = t.value(request, beans);
    }
    Counter.builder("sluice.http.requests").description("Requests decided by sluice.http.rules, with the configured tags")
        .tags(Tags.of(kv)).register(registry).increment();
  }

  /** One tag: its expression and the values it has handed out. */
  static final class Tag {
    final String name;
    private final String where;
    private final Expression expression;
    private final BoundedValues values;
    private final AtomicBoolean warned = new AtomicBoolean();

    Tag(String where, String name, Expression expression, int max) {
      this.where = where;
      this.name = name;
      this.expression = expression;
      this.values = new BoundedValues(max);
    }

    String value(RuleRequest request, BeanFactoryResolver beans) {
      Object v;
      try {
        StandardEvaluationContext ctx = new StandardEvaluationContext(request);
        ctx.setBeanResolver(beans);
        v = expression.getValue(ctx);
      } catch (RuntimeException e) {
        if (warned.compareAndSet(false, true)) {
          LOG.log(System.Logger.Level.WARNING, where + ".expression failed on a request (" + e + "); counted as " + NONE, e);
        }
        return NONE;
      }
      return bound(v == null ? null : v.toString());
    }

    /** {@code v}, or {@link #NONE} when blank, or {@link #OTHER} when it would be a value past the cap (the kernel's rule). */
    String bound(String v) {
      return v == null || v.isBlank() ? NONE : values.bound(v);
    }

    int distinct() {
      return values.distinct();
    }
  }
}

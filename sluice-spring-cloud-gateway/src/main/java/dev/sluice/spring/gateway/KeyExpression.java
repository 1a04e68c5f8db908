package dev.sluice.spring.gateway;

import dev.sluice.http.KeyResolver;
import java.util.concurrent.atomic.AtomicBoolean;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * A route's {@code key}: a SpEL expression over the request of the gateway (its root object: the
 * reactive {@code ServerWebExchange}, the servlet {@code ServerRequest}), beans as {@code @name}. A
 * value that fails on a request is no way around the limit, nor an error page: the request is charged
 * to the shared key {@code unknown}, and the failure is logged once.
 */
final class KeyExpression {
  private static final System.Logger LOG = System.getLogger(KeyExpression.class.getName());
  private static final SpelExpressionParser PARSER = new SpelExpressionParser();

  private final String where;
  private final Expression expression;
  private final BeanFactoryResolver beans;
  private final AtomicBoolean warned = new AtomicBoolean();

  private KeyExpression(String where, Expression expression, BeanFactory beans) {
    this.where = where;
    this.expression = expression;
    this.beans = beans == null ? null : new BeanFactoryResolver(beans);
  }

  /**
   * {@code text} parsed; {@code where} names the route in the message of one that is no expression.
   * {@code beans} resolves {@code @name}; null only to check the text.
   */
  static KeyExpression parse(String where, String text, BeanFactory beans) {
    try {
      return new KeyExpression(where, PARSER.parseExpression(text), beans);
    } catch (ParseException x) {
      throw new IllegalArgumentException(where + ": key '" + text + "' is not a SpEL expression: " + x.getMessage(), x);
    }
  }

  /** The expression's value on {@code root} as text; null when it has none or failed. */
  String evaluate(Object root) {
    try {
      StandardEvaluationContext ctx = new StandardEvaluationContext(root);
      if (beans != null) {
        ctx.setBeanResolver(beans);
      }
      Object v = expression.getValue(ctx);
      return v == null ? null : v.toString();
    } catch (RuntimeException x) {
      if (warned.compareAndSet(false, true)) {
        LOG.log(System.Logger.Level.WARNING, where + ": key failed on a request (" + x + "); such requests are charged to the key '"
            + KeyResolver.UNKNOWN + "'", x);
      }
      return null;
    }
  }
}

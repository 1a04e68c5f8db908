package dev.sluice.benchmarks;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.concurrent.atomic.LongAdder;
import javax.sql.DataSource;

/**
 * A {@link DataSource} wrapper that counts what goes to the server: statement executions
 * ({@code execute*}, batches counted once) and transaction ends ({@code commit}, {@code rollback}).
 * With the PostgreSQL driver each of these is one round trip (a {@code BEGIN} rides along with the
 * transaction's first statement).
 */
final class CountingDataSource {
  final LongAdder executions = new LongAdder();
  final LongAdder commits = new LongAdder();
  final DataSource dataSource;

  CountingDataSource(DataSource target) {
    this.dataSource = (DataSource) wrap(target, DataSource.class);
  }

  long roundTrips() {
    return executions.sum() + commits.sum();
  }

  private Object wrap(Object target, Class<?> iface) {
    InvocationHandler h = (proxy, m, args) -> {
      String name = m.getName();
      if (name.equals("unwrap") && args != null && args[0] instanceof Class<?> c && c.isInstance(proxy)) {
        return proxy;
      }
      Object r;
      try {
        r = m.invoke(target, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
      if (name.startsWith("execute")) {
        executions.increment();
      } else if (name.equals("commit") || name.equals("rollback")) {
        commits.increment();
      }
      return wrapResult(r, m);
    };
    return Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(), new Class<?>[] {iface}, h);
  }

  private Object wrapResult(Object r, Method m) {
    if (r instanceof CallableStatement) {
      return wrap(r, CallableStatement.class);
    }
    if (r instanceof PreparedStatement) {
      return wrap(r, PreparedStatement.class);
    }
    if (r instanceof Statement) {
      return wrap(r, Statement.class);
    }
    if (r instanceof Connection && m.getReturnType() == Connection.class) {
      return wrap(r, Connection.class);
    }
    return r;
  }
}

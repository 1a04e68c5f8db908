package dev.sluice.redis;

import dev.sluice.spi.StoreNotReachedException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The {@link RedisTransport} over Lettuce: its async commands on the {@link RedisLink}'s connection
 * (standalone, Sentinel or Cluster), each script tracked until answered so that a dropped connection
 * cannot send it twice. Lettuce's futures are {@link CompletableFuture}s: cancelling one keeps a
 * command still queued from being sent.
 */
final class LettuceTransport implements RedisTransport {
  final RedisLink link; // package-private for tests: what it has sent and not had answered

  LettuceTransport(RedisLink link) {
    this.link = link;
  }

  @Override public CompletableFuture<List<Object>> evalsha(String sha, String[] keys, String[] args) {
    RedisClusterAsyncCommands<String, String> c = commands();
    return link.sent(c, c.<List<Object>>evalsha(sha, ScriptOutputType.MULTI, keys, args)).toCompletableFuture();
  }

  @Override public CompletableFuture<List<Object>> eval(String body, String[] keys, String[] args) {
    RedisClusterAsyncCommands<String, String> c = commands();
    return link.sent(c, c.<List<Object>>eval(body, ScriptOutputType.MULTI, keys, args)).toCompletableFuture();
  }

  @Override public CompletableFuture<?> del(String key) {
    return commands().del(key).toCompletableFuture();
  }

  @Override public boolean noScript(Throwable error) {
    return error instanceof RedisNoScriptException;
  }

  @Override public boolean timedOut(Throwable error) {
    return error instanceof RedisCommandTimeoutException;
  }

  @Override public void close() {
    link.close();
  }

  private RedisClusterAsyncCommands<String, String> commands() {
    RedisClusterAsyncCommands<String, String> c = link.commands();
    if (c == null) {
      throw new StoreNotReachedException("not connected to Redis");
    }
    return c;
  }
}

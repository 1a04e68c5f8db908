/**
 * HTTP rate limiting: {@link dev.sluice.http.HttpRateLimit} (what to check and how to answer),
 * {@link dev.sluice.http.RateLimitServletFilter} and {@link dev.sluice.http.RateLimitHttpFilter}
 * (where), {@link dev.sluice.http.KeyResolver} and {@link dev.sluice.http.TrustedProxies} (who),
 * {@link dev.sluice.http.HttpVerdict} (what the client is told: status, headers, problem body) and
 * {@link dev.sluice.http.RateLimitHeaders} (how the limit headers are spelled).
 */
package dev.sluice.http;

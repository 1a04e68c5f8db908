/** Micrometer meters for Sluice: {@link dev.sluice.micrometer.RateLimitMetrics}. */
package dev.sluice.micrometer;

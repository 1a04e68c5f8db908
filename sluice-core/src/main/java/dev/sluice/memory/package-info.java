/** The memory tier: per-instance, zero I/O, bounded in keys and key length. */
package dev.sluice.memory;

/** The Sluice API: policies, limiters, decisions, tickets, failure modes and time. */
package dev.sluice;

-- Sluice PostgreSQL schema, version 1.
--
-- Apply it yourself (psql -f schema.sql) or let JdbcRateLimiter.applySchema() apply it. The table name
-- sluice_rate_limit is replaced by the configured name when the library applies it. Every statement
-- is idempotent (IF NOT EXISTS), so applying it twice is harmless.
--
-- One row per (tenant, policy, key). No raw policy name or key is stored: policy_id and key_id are
-- domain-separated SHA-256 ids (dev.sluice.internal.StoredId), 64 hex characters each.
--
-- Only the primary key is indexed and fillfactor leaves 30% of each page free, so a decision's UPDATE
-- changes no indexed column and finds room on the row's own page: PostgreSQL then makes it a HOT
-- (heap-only tuple) update, which writes no index entry and lets page pruning reclaim the old version
-- without VACUUM.
CREATE TABLE IF NOT EXISTS sluice_rate_limit (
  tenant      text     NOT NULL DEFAULT '',   -- '' outside tenant mode
  policy_id   text     NOT NULL,              -- StoredId.policy(policy name)
  key_id      text     NOT NULL,              -- StoredId.key(policy name, key)
  alg         smallint NOT NULL,              -- 1 fixed window, 2 sliding window, 3 token bucket, 4 GCRA
  p1          bigint   NOT NULL,              -- the algorithm's parameters the row was last decided with
  p2          bigint   NOT NULL,
  p3          bigint   NOT NULL,
  pinned      boolean  NOT NULL DEFAULT false,-- true after override(key, policy): p1..p3 win over the caller's policy
  s0          bigint   NOT NULL,              -- ReferenceModel state[0..2]
  s1          bigint   NOT NULL,
  s2          bigint   NOT NULL,
  expires_at  bigint   NOT NULL,              -- epoch microseconds after which the state decides like an absent one
  version     bigint   NOT NULL,              -- bumped by every write; sweep deletes only an unchanged version
  updated_at  bigint   NOT NULL,              -- epoch microseconds of the last write
  PRIMARY KEY (tenant, policy_id, key_id)
) WITH (fillfactor = 70);

COMMENT ON TABLE sluice_rate_limit IS 'sluice schema 1';

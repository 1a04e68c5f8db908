-- Sluice versioned store, PostgreSQL. ${table} is replaced by the configured table name.
-- Ids are SHA-256 hex (never the raw key); "C" collation so that ids sort bytewise, as list() promises.
CREATE TABLE IF NOT EXISTS ${table} (
  partition_id VARCHAR(64) COLLATE "C" NOT NULL,
  record_id    VARCHAR(64) COLLATE "C" NOT NULL,
  version      BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  state        VARCHAR(255) NOT NULL,
  PRIMARY KEY (partition_id, record_id)
)

-- Sluice versioned store, MariaDB and MySQL (InnoDB). ${table} is replaced by the configured table name.
-- Ids are SHA-256 hex (never the raw key); ascii_bin so that ids sort bytewise, as list() promises,
-- and values compare byte for byte.
CREATE TABLE IF NOT EXISTS ${table} (
  partition_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  record_id    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  version      BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  state        VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  PRIMARY KEY (partition_id, record_id)
) ENGINE=InnoDB

-- Sluice versioned store, any SQL database. ${table} is replaced by the configured table name.
-- Make partition_id and record_id sort bytewise (a binary or "C" collation) if your database allows it.
CREATE TABLE ${table} (
  partition_id VARCHAR(64) NOT NULL,
  record_id    VARCHAR(64) NOT NULL,
  version      BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  state        VARCHAR(255) NOT NULL,
  PRIMARY KEY (partition_id, record_id)
)

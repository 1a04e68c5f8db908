-- Sluice tenant mode (row-level security), schema version 1. Apply after schema.sql.
--
-- Every statement of a tenant-mode limiter binds its tenant to its own transaction with
-- set_config('sluice.tenant', tenant, true); this policy then hides other tenants' rows from every
-- read and refuses any write of a row for another tenant. FORCE makes it bind the table's owner too.
-- Superusers and roles with BYPASSRLS are never bound by RLS: connect as an ordinary role.
-- NULLIF: once a session has set sluice.tenant, current_setting returns '' (not NULL) outside the
-- transaction that set it, so an unbound pooled connection must match no tenant at all.
ALTER TABLE sluice_rate_limit ENABLE ROW LEVEL SECURITY;
ALTER TABLE sluice_rate_limit FORCE ROW LEVEL SECURITY;
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE tablename = 'sluice_rate_limit' AND policyname = 'sluice_rate_limit_tenant') THEN
    CREATE POLICY sluice_rate_limit_tenant ON sluice_rate_limit
      USING (tenant = NULLIF(current_setting('sluice.tenant', true), ''))
      WITH CHECK (tenant = NULLIF(current_setting('sluice.tenant', true), ''));
  END IF;
END $$;

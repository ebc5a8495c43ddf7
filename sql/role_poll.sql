-- The relay's least-privilege role in poll mode: no REPLICATION; it reads
-- the outbox table and marks rows dispatched. Change the password before
-- running this anywhere but a test bed.
DO $$BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'debezium') THEN
    CREATE ROLE debezium LOGIN PASSWORD 'debezium@123';
  END IF;
END$$;
GRANT SELECT, UPDATE (dispatched_at) ON public.outbox TO debezium;

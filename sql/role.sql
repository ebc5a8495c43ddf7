-- The relay's least-privilege role (connector keys database.user and
-- database.password): it may open replication connections and create its
-- slot, and read the outbox table for an initial snapshot. Nothing else.
-- Change the password before running this anywhere but a test bed.
DO $$BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'debezium') THEN
    CREATE ROLE debezium LOGIN REPLICATION PASSWORD 'debezium@123';
  END IF;
END$$;
GRANT SELECT ON public.outbox TO debezium;

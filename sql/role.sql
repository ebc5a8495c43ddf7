-- The relay's least-privilege role (connector keys database.user and
-- database.password): it may open replication connections and create its
-- slot, and read the outbox table for an initial snapshot. Nothing else.
-- It is created without a password, so nobody can log in as it with one
-- until you set it. In psql, run
--   \password debezium
-- which asks for the password twice and sends only its hash: the password
-- stays out of the server's log, psql's history and the process list.
DO $$BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'debezium') THEN
    CREATE ROLE debezium LOGIN REPLICATION;
  END IF;
END$$;
GRANT SELECT ON public.outbox TO debezium;

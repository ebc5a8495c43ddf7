-- The relay's least-privilege role in poll mode: no REPLICATION; it reads
-- the outbox table and marks rows dispatched. It is created without a
-- password, so nobody can log in as it with one until you set it. In psql,
-- run
--   \password debezium
-- which asks for the password twice and sends only its hash: the password
-- stays out of the server's log, psql's history and the process list.
DO $$BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'debezium') THEN
    CREATE ROLE debezium LOGIN;
  END IF;
END$$;
GRANT SELECT, UPDATE (dispatched_at) ON public.outbox TO debezium;

-- Clean-up of published outbox rows. outboxrelay does this itself when
-- outbox.retention.ms is set (its janitor runs exactly these statements, in
-- batches, and needs the grant below). To clean up from cron instead, run
-- this file with psql as a role that may delete from the table.
--
-- Never delete a row the slot has not confirmed: the transaction's snapshot
-- is taken by its first statement, which also reads the WAL insert position;
-- every row that snapshot sees was committed before that position. The
-- DELETE runs only once the slot confirmed past it, and sees only those rows.
GRANT DELETE ON public.outbox TO debezium;

BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_current_wal_insert_lsn() AS snapshot_lsn \gset
SELECT coalesce(bool_and(confirmed_flush_lsn >= :'snapshot_lsn'), false) AS confirmed
  FROM pg_replication_slots WHERE slot_name = 'public_outbox' \gset
\if :confirmed
-- The age test is repeated outside the subquery: in a partitioned table a
-- ctid is unique only within one partition.
DELETE FROM public.outbox
 WHERE ctid = ANY(ARRAY(SELECT ctid FROM public.outbox
                         WHERE created_at < now() - interval '7 days'
                         LIMIT 1000))
   AND created_at < now() - interval '7 days';
\else
\echo 'slot public_outbox has not confirmed past this snapshot yet; nothing deleted, run again later'
\endif
COMMIT;

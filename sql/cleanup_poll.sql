-- Clean-up of published outbox rows in poll mode. outboxrelay does this
-- itself when outbox.retention.ms is set (its janitor runs this statement,
-- in batches, and needs the grant below). A row is deleted only once it is
-- marked dispatched, which happens only after Kafka acknowledged it.
GRANT DELETE ON public.outbox TO debezium;

DELETE FROM public.outbox
 WHERE ctid = ANY(ARRAY(SELECT ctid FROM public.outbox
                         WHERE dispatched_at IS NOT NULL AND dispatched_at < now() - interval '7 days'
                         LIMIT 1000))
   AND dispatched_at IS NOT NULL AND dispatched_at < now() - interval '7 days';

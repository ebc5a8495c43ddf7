-- The outbox table for poll mode (outbox.capture.mode=poll): the polling
-- article's table, with the columns the example connector routes by. No
-- slot, no publication, any wal_level. Connector keys to go with it:
--   "outbox.capture.mode": "poll", "outbox.poll.order.column": "id"
--
-- id orders one aggregate's events (a bigserial: insertion order); the
-- event id header is message_id, as in logical mode. dispatched_at is set
-- by the relay once Kafka acknowledged the row; the partial index holds
-- only undispatched rows, so an idle poll reads a nearly empty index.
CREATE TABLE IF NOT EXISTS public.outbox (
    id             bigserial   PRIMARY KEY,
    message_id     uuid        NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    payload        jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    dispatched_at  timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_undispatched ON public.outbox (id, message_id) WHERE dispatched_at IS NULL;

-- The outbox table of the polling-outbox article ("Producer, Relayer,
-- Consumer"), unchanged. outboxrelay relays it as it is with
-- connector.json beside this file: topic = the part of type before the
-- first dot, key = aggregate_id, header event_id = id, value = payload.
-- dispatched_at stays NULL: a log-based relay needs no dispatch mark, and
-- the partial index then covers every row (drop it, or keep it if a
-- polling relay still runs beside outboxrelay during a migration).
CREATE TABLE events_outbox (
    id BIGSERIAL PRIMARY KEY,
    aggregate_id UUID NOT NULL,
    type TEXT NOT NULL,
    payload JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    dispatched_at TIMESTAMPTZ
);
CREATE INDEX events_outbox_pending_idx
    ON events_outbox (created_at)
    WHERE dispatched_at IS NULL;

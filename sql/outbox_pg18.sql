-- The outbox table, PostgreSQL 18 and later: the built-in uuidv7() gives
-- time-ordered ids, so new keys land at the right edge of the primary key
-- index. Services insert one row here in the same transaction as their
-- business change; outboxrelay publishes each inserted row to Kafka.
CREATE TABLE IF NOT EXISTS public.outbox (
    message_id     uuid PRIMARY KEY DEFAULT uuidv7(),
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    payload        jsonb       NOT NULL,
    status         text        NOT NULL DEFAULT 'PENDING',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    sent_at        timestamptz,
    retry_count    integer     NOT NULL DEFAULT 0,
    last_error     text,
    next_retry_at  timestamptz,
    version        integer     NOT NULL DEFAULT 0,
    remark         text
);

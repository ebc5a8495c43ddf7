-- The outbox table. Services insert one row here in the same transaction as
-- their business change; outboxrelay publishes each inserted row to Kafka.
-- gen_random_uuid() is built in from PostgreSQL 13 on. On PostgreSQL 18,
-- prefer DEFAULT uuidv7(): time-ordered ids keep the primary key index compact.
CREATE TABLE IF NOT EXISTS public.outbox (
    message_id     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
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

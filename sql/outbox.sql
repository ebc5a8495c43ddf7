-- The outbox table, PostgreSQL 13 to 17 (on 18, `outboxrelay sql` prints it
-- with the built-in uuidv7() in place of outbox_uuidv7(): sql.Outbox in
-- sql/sql.go). Services insert one row here in the same transaction as their
-- business change; outboxrelay publishes each inserted row to Kafka.
--
-- Ids are time-ordered UUIDs (version 7: 48 bits of Unix milliseconds, then
-- random bits from the built-in gen_random_uuid()), so new keys land at the
-- right edge of the primary key index and it stays compact under steady
-- inserts and deletes, where random (version 4) ids touch every page.
CREATE OR REPLACE FUNCTION public.outbox_uuidv7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(set_bit(set_bit(
    overlay(uuid_send(gen_random_uuid())
            PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
            FROM 1 FOR 6),
    52, 1), 53, 1), 'hex')::uuid
$$;
CREATE TABLE IF NOT EXISTS public.outbox (
    message_id     uuid PRIMARY KEY DEFAULT public.outbox_uuidv7(),
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

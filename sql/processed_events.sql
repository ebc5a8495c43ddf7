-- The consumer side's deduplication table (package consumer): one row per
-- (consumer, event id) applied. A consumer inserts its row in the same
-- transaction as the event's side effect, so a redelivered event finds it
-- and is skipped: at-least-once delivery, applied exactly once. Create it
-- in the consumer's database, beside the tables the side effects change.
--
-- event_id is text, so it holds any id the relay sends in the id header
-- (a uuid, a bigserial). Old rows may be deleted once their events cannot
-- arrive again (consumer.DeleteProcessed says how old is safe); the index
-- on processed_at serves that clean-up.
CREATE TABLE IF NOT EXISTS public.processed_events (
    consumer     text        NOT NULL,
    event_id     text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX IF NOT EXISTS processed_events_processed_at_idx
    ON public.processed_events (processed_at);

-- The publication outboxrelay streams from (connector key publication.name),
-- created by an administrator: the example config runs with
-- publication.autocreate.mode=disabled, so the relay never needs the
-- CREATE privilege on the database.
CREATE PUBLICATION order_db_outbox FOR TABLE public.outbox;

-- DEMO ONLY: docker compose's password for the relay's role, the one
-- deploy/docker-compose.yml gives the relay (OUTBOXRELAY_DB_PASSWORD).
-- sql/role.sql creates the role without a password; outside this demo set
-- one with psql's \password debezium, and never this one.
ALTER ROLE debezium PASSWORD 'debezium@123';

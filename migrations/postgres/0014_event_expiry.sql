-- Per-event expiry, as migrations/0020_event_expiry.sql on SQLite (read the reasons there).
ALTER TABLE event_log ADD COLUMN expires_at bigint;

CREATE INDEX event_log_by_expiry ON event_log (expires_at) WHERE expires_at IS NOT NULL;

ALTER TABLE scheduled_events ADD COLUMN ttl_millis bigint;

ALTER TABLE streams ADD COLUMN event_ttl_seconds double precision;

CREATE OR REPLACE VIEW events AS
    SELECT s.name AS stream, e.seq AS seq,
           to_char(to_timestamp(e.time / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time,
           e.payload AS payload,
           e.traceparent AS traceparent,
           encode(e.hash, 'hex') AS hash,
           e.event_key AS key,
           to_char(to_timestamp(e.expires_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires
    FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id;

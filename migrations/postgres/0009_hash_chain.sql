-- Each stream a hash chain, as migrations/0014_hash_chain.sql on SQLite: every event stores
-- SHA-256 over the hash of the event before it and the event itself. Events stored before
-- this migration have none; their stream's chain starts with its first event after it.
ALTER TABLE event_log ADD COLUMN hash bytea;

-- The hash of the stream's newest event, and the hash before its first retained event.
ALTER TABLE streams ADD COLUMN chain_head bytea;
ALTER TABLE streams ADD COLUMN chain_base bytea;

CREATE OR REPLACE VIEW events AS
    SELECT s.name AS stream, e.seq AS seq,
           to_char(to_timestamp(e.time / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time,
           e.payload AS payload,
           e.traceparent AS traceparent,
           encode(e.hash, 'hex') AS hash
    FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id;

-- An event's key, as migrations/0015_event_keys.sql on SQLite: what the event is about,
-- given back on every read and covered by its hash-chain link. NULL for an event without
-- one (a nullable column with no default is added without rewriting the table).
ALTER TABLE event_log ADD COLUMN event_key text;

-- The latest event of a key in a stream is one descent of this index. Partial: events
-- without a key cost it nothing.
CREATE INDEX event_log_by_event_key ON event_log (stream_id, event_key, seq) WHERE event_key IS NOT NULL;

-- A view's columns cannot be reordered in place: the key goes last here.
CREATE OR REPLACE VIEW events AS
    SELECT s.name AS stream, e.seq AS seq,
           to_char(to_timestamp(e.time / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time,
           e.payload AS payload,
           e.traceparent AS traceparent,
           encode(e.hash, 'hex') AS hash,
           e.event_key AS key
    FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id;

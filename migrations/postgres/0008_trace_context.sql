-- W3C trace context with the event: the `traceparent` its publisher gave, given back on
-- every read. NULL for an untraced event (a nullable column with no default is added
-- without rewriting the table).
ALTER TABLE event_log ADD COLUMN traceparent text;

CREATE OR REPLACE VIEW events AS
    SELECT s.name AS stream, e.seq AS seq,
           to_char(to_timestamp(e.time / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS time,
           e.payload AS payload,
           e.traceparent AS traceparent
    FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id;

-- W3C trace context with the event: the `traceparent` its publisher gave (PUB `trace=`,
-- the HTTP `traceparent` header), given back on every read so that whoever consumes the
-- event continues the publisher's trace. NULL for an untraced event: the column costs an
-- untraced log nothing (SQLite stores a trailing NULL in no bytes at all).
ALTER TABLE event_log ADD COLUMN traceparent TEXT;

-- The view people query shows it.
DROP VIEW events;
CREATE VIEW events AS
    SELECT s.name AS stream,
           e.key - (s.id << 40) AS seq,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.time / 1000.0, 'unixepoch') AS time,
           e.payload AS payload,
           e.traceparent AS traceparent
    FROM streams AS s
    JOIN event_log AS e ON e.key BETWEEN (s.id << 40) AND (s.id << 40) + 1099511627775;

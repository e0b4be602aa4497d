-- An event's key (PUB `key=`, the HTTP `Replay-Key` header): what the event is about, given
-- back on every read and covered by its hash-chain link. NULL for an event without one
-- (SQLite stores a trailing NULL in no bytes at all).
ALTER TABLE event_log ADD COLUMN event_key TEXT;

-- By stream (the id, `key >> 40`), then key, then sequence: the latest event of a key is
-- one descent (`… AND event_key = ? ORDER BY key DESC LIMIT 1`), and a stream's distinct
-- keys are one descent each (`min(event_key) … WHERE event_key > ?`), so a snapshot of K
-- keys costs K lookups however many events the stream holds. Partial: events without a
-- key cost it nothing.
CREATE INDEX event_log_by_event_key ON event_log (key >> 40, event_key, key) WHERE event_key IS NOT NULL;

-- The view people query shows it.
DROP VIEW events;
CREATE VIEW events AS
    SELECT s.name AS stream,
           e.key - (s.id << 40) AS seq,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.time / 1000.0, 'unixepoch') AS time,
           e.event_key AS key,
           e.payload AS payload,
           e.traceparent AS traceparent,
           lower(hex(e.hash)) AS hash
    FROM streams AS s
    JOIN event_log AS e ON e.key BETWEEN (s.id << 40) AND (s.id << 40) + 1099511627775;

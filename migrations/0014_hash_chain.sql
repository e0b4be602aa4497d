-- Each stream a hash chain: every event stores SHA-256 over the hash of the event before
-- it and the event itself (stream, seq, time, payload), so an event changed after it was
-- written, or one removed or reordered, no longer matches its chain, and a reader never
-- gets it as good. The format is docs/INTEGRITY.md's. Events stored before this migration
-- have no hash: their stream's chain starts with its first event written after it.
ALTER TABLE event_log ADD COLUMN hash BLOB;

-- The hash of the stream's newest event, which the next one follows, and the hash before
-- its first retained event (retention removes the events, not the chain). NULL: none yet.
ALTER TABLE streams ADD COLUMN chain_head BLOB;
ALTER TABLE streams ADD COLUMN chain_base BLOB;

-- The view people query shows each event's hash as hex.
DROP VIEW events;
CREATE VIEW events AS
    SELECT s.name AS stream,
           e.key - (s.id << 40) AS seq,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.time / 1000.0, 'unixepoch') AS time,
           e.payload AS payload,
           e.traceparent AS traceparent,
           lower(hex(e.hash)) AS hash
    FROM streams AS s
    JOIN event_log AS e ON e.key BETWEEN (s.id << 40) AND (s.id << 40) + 1099511627775;

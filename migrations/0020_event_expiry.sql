-- Per-event expiry (PUB `ttl=`, the HTTP `Replay-TTL` header, a stream's `event_ttl`): when
-- the event expires, in ms since 1970. NULL for an event that does not (a trailing NULL is
-- stored in no bytes). An expired event is never served; the retention pass removes it,
-- leaving a hole (`event_holes`) where it was not the oldest.
ALTER TABLE event_log ADD COLUMN expires_at INTEGER;

-- The retention pass takes the expired events earliest first from this index. Partial:
-- events that never expire cost it nothing, and those that do are mostly appended at its
-- end (a stream's expiries follow its commit times).
CREATE INDEX event_log_by_expiry ON event_log (expires_at) WHERE expires_at IS NOT NULL;

-- A scheduled event's own time-to-live, counted from when it is appended (NULL: its
-- stream's default then).
ALTER TABLE scheduled_events ADD COLUMN ttl_millis INTEGER;

-- A stream's default for events published without `ttl=`, in seconds (NULL: none).
ALTER TABLE streams ADD COLUMN event_ttl_seconds REAL;

DROP VIEW events;
CREATE VIEW events AS
    SELECT s.name AS stream,
           e.key - (s.id << 40) AS seq,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.time / 1000.0, 'unixepoch') AS time,
           e.event_key AS key,
           e.payload AS payload,
           e.traceparent AS traceparent,
           lower(hex(e.hash)) AS hash,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.expires_at / 1000.0, 'unixepoch') AS expires
    FROM streams AS s
    JOIN event_log AS e ON e.key BETWEEN (s.id << 40) AND (s.id << 40) + 1099511627775;

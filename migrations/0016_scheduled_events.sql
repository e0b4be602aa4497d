-- Scheduled events (PUB `delay=` / `at=`, the HTTP `Replay-Delay` / `Replay-At` headers):
-- stored and acknowledged at once, as durable as any event, and appended to their stream,
-- with its next sequence number and the commit's time, when they fall due. The writer
-- takes due rows out of this table and appends them in one transaction, so each is
-- appended exactly once, across restarts.

CREATE TABLE scheduled_events (
    -- AUTOINCREMENT: an id is never given again, so UNSCHEDULE of an old id can never
    -- cancel a later event.
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    stream_id   INTEGER NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    due_at      INTEGER NOT NULL,   -- ms since 1970
    created_at  INTEGER NOT NULL,   -- ms since 1970
    event_key   TEXT,
    traceparent TEXT,
    payload     BLOB    NOT NULL
);

-- The writer's drain: the earliest due first, one descent.
CREATE INDEX scheduled_events_by_due ON scheduled_events (due_at, id);
-- INFO's count and next due, and `replayctl scheduled`, per stream.
CREATE INDEX scheduled_events_by_stream ON scheduled_events (stream_id, due_at, id);

-- What people query:  SELECT * FROM scheduled WHERE stream = 'jobs' ORDER BY due
CREATE VIEW scheduled AS
    SELECT s.name AS stream,
           e.id AS id,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.due_at / 1000.0, 'unixepoch') AS due,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.created_at / 1000.0, 'unixepoch') AS created,
           e.event_key AS key,
           e.payload AS payload
    FROM scheduled_events AS e JOIN streams AS s ON s.id = e.stream_id;

-- Each stream's count of pending scheduled events and the earliest one's time, kept by the
-- writer in the stream's row (INFO, LIST, the page and `replayctl top` read them there).
ALTER TABLE streams ADD COLUMN scheduled_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN next_due INTEGER;

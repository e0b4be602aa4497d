-- replay schema, version 1: streams and their events.
-- Migrations are only ever appended: never edit a released file, add the next one.
-- Times are ISO-8601 UTC text ('2026-11-22T03:17:14.123Z') so the sqlite3 shell shows
-- them as they are and they sort as they compare.

-- One row per stream. The counters are kept in the same transaction as the events, so
-- opening a database reads one row per stream, never the events (start-up is O(streams)).
CREATE TABLE streams (
    id               INTEGER PRIMARY KEY,
    name             TEXT    NOT NULL UNIQUE,
    capacity         INTEGER CHECK (capacity IS NULL OR capacity >= 0),  -- NULL: unlimited
    max_bytes        INTEGER CHECK (max_bytes IS NULL OR max_bytes >= 0),
    max_age_seconds  REAL    CHECK (max_age_seconds IS NULL OR max_age_seconds > 0),
    created_at       TEXT    NOT NULL,
    first_seq        INTEGER NOT NULL DEFAULT 1,   -- lowest retained; last_seq + 1 when empty
    last_seq         INTEGER NOT NULL DEFAULT 0,   -- highest ever assigned; never reused
    event_count      INTEGER NOT NULL DEFAULT 0,   -- retained events
    byte_count       INTEGER NOT NULL DEFAULT 0,   -- retained payload bytes
    terminal         TEXT    CHECK (terminal IN ('completed', 'failed')),
    terminal_message TEXT,
    terminal_at      TEXT
);

-- The log, keyed by stream id for compactness; read it through the `events` view.
CREATE TABLE event_log (
    stream_id INTEGER NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    time      TEXT    NOT NULL,
    payload   BLOB    NOT NULL,
    PRIMARY KEY (stream_id, seq)
) WITHOUT ROWID;

-- Catch-up "from a time" finds its first sequence number with this index.
CREATE INDEX event_log_by_time ON event_log (stream_id, time);

-- What people query:  SELECT seq, time, payload FROM events WHERE stream='orders' ORDER BY seq
CREATE VIEW events AS
    SELECT s.name AS stream, e.seq AS seq, e.time AS time, e.payload AS payload
    FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id;

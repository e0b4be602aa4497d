-- Each key's newest event, one row per (stream, key), in place of the index of every keyed
-- event by its key (0015). GET reads a key's row; a snapshot reads the stream's rows.
--
-- Why a table and not the index: SQLite's WAL takes every page a commit changed whole, and
-- the index put each key's events together, so a commit of 4,096 events over 1,000 keys
-- changed about 1,000 index pages, 4 MB written for 150 KB of events. A keyed scan over
-- 1,000 keys caught up at 52,000 events/s with the index and at 137,000 with it dropped.
-- This table is one row per key, set once per key a batch touches: a commit changes the
-- few pages its keys' rows are on.
--
-- A row may point past what a read sees (a fork's source went on after the fork point, or
-- the writer after a reader's point): the read then walks back from its end to the key's
-- newest event before it. A row whose event retention removed is removed with it.
CREATE TABLE event_keys (
    stream_id INTEGER NOT NULL,
    event_key TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    PRIMARY KEY (stream_id, event_key)
) WITHOUT ROWID;

-- A snapshot reads the keys whose newest event is retained; retention removes rows by it.
CREATE INDEX event_keys_by_seq ON event_keys (stream_id, seq);

INSERT INTO event_keys (stream_id, event_key, seq)
    SELECT key >> 40, event_key, max(key) & 1099511627775
    FROM event_log WHERE event_key IS NOT NULL
    GROUP BY key >> 40, event_key;

DROP INDEX event_log_by_event_key;

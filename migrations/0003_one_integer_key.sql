-- replay schema, version 3: the log keyed by one integer, times as integers, no index
-- per event.
--
-- Each event was a row in a (stream_id, seq) WITHOUT ROWID table plus an entry in a
-- (stream_id, time) index: two B-trees per event, and a 24-byte text time in each.
-- tools/sqlite_ceiling.py measures the layouts side by side; one rowid B-tree keyed by
-- (stream id << 40) | seq, with an integer time, inserts the most events per second.
--
-- `key`:  (stream id << 40) | seq. A stream's events are one contiguous key range, in
--         sequence order, so reads, trims and deletes are rowid range scans. Room for
--         8,388,607 stream ids and 1,099,511,627,775 sequence numbers per stream.
-- `time`: the commit time in milliseconds since 1970-01-01 UTC. It never decreases within
--         a stream (a clock stepped back is held at the stream's last time), so `since=`
--         starts and age limits find their position by binary search on seq, and need no
--         index of their own.
CREATE TABLE event_log_v3 (
    key     INTEGER PRIMARY KEY,
    time    INTEGER NOT NULL,
    payload BLOB    NOT NULL
);

-- Times in a database written by version 2 came from one clock and only go forward in
-- practice; max() over the preceding rows makes that a guarantee for binary search.
INSERT INTO event_log_v3 (key, time, payload)
    SELECT (stream_id << 40) | seq,
           max(CAST(round((julianday(time) - 2440587.5) * 86400000.0) AS INTEGER))
               OVER (PARTITION BY stream_id ORDER BY seq ROWS UNBOUNDED PRECEDING),
           payload
    FROM event_log
    ORDER BY stream_id, seq;

DROP VIEW events;
DROP INDEX event_log_by_time;
DROP TABLE event_log;
ALTER TABLE event_log_v3 RENAME TO event_log;

-- The stream's newest event time, so the next commit's time can be kept from going back
-- across restarts without reading the log.
ALTER TABLE streams ADD COLUMN last_time INTEGER NOT NULL DEFAULT 0;
UPDATE streams SET last_time = coalesce(
    (SELECT time FROM event_log WHERE key = (streams.id << 40) | streams.last_seq), 0);

-- What people query, unchanged:
--   SELECT seq, time, payload FROM events WHERE stream='orders' ORDER BY seq
-- `time` reads as before ('2026-11-22T03:17:14.123Z'); the key range join lets SQLite
-- read one stream's events by rowid.
CREATE VIEW events AS
    SELECT s.name AS stream,
           e.key - (s.id << 40) AS seq,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.time / 1000.0, 'unixepoch') AS time,
           e.payload AS payload
    FROM streams AS s
    JOIN event_log AS e ON e.key BETWEEN (s.id << 40) AND (s.id << 40) + 1099511627775;

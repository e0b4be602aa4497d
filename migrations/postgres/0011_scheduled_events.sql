-- Scheduled events: the same table as SQLite's migrations/0016_scheduled_events.sql (read
-- the reasons there). Several daemons drain it: each takes due rows with
-- FOR UPDATE SKIP LOCKED inside the transaction that appends them, so a due event is
-- appended by one daemon, once.

CREATE TABLE scheduled_events (
    id          bigserial PRIMARY KEY,
    stream_id   bigint NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    due_at      bigint NOT NULL,
    created_at  bigint NOT NULL,
    event_key   text,
    traceparent text,
    payload     bytea  NOT NULL
);

CREATE INDEX scheduled_events_by_due ON scheduled_events (due_at, id);
CREATE INDEX scheduled_events_by_stream ON scheduled_events (stream_id, due_at, id);

CREATE VIEW scheduled AS
    SELECT s.name AS stream, e.id AS id,
           to_char(to_timestamp(e.due_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS due,
           to_char(to_timestamp(e.created_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created,
           e.event_key AS key,
           e.payload AS payload
    FROM scheduled_events AS e JOIN streams AS s ON s.id = e.stream_id;

-- Each stream's count of pending scheduled events and the earliest one's time, kept by the
-- writer in the stream's row (INFO, LIST, the page and `replayctl top` read them there).
ALTER TABLE streams ADD COLUMN scheduled_count bigint NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN next_due bigint;

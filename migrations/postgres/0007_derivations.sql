-- Derived streams: the same table and column as SQLite's migrations/0012_derivations.sql
-- (read the reasons there). A derivation runs in one daemon at a time (it takes the same
-- claim as a source); the positions it read from are compared inside the writer's
-- transaction under the stream's row lock, so a daemon that lost its claim changes nothing.

CREATE TABLE derivations (
    stream_id  bigint PRIMARY KEY REFERENCES streams(id) ON DELETE CASCADE,
    definition text   NOT NULL,
    positions  text   NOT NULL DEFAULT '{}',
    state      text,
    status     text   NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'stopped')),
    error      text,
    processed  bigint NOT NULL DEFAULT 0,
    errors     bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);

ALTER TABLE event_log ADD COLUMN origin text;

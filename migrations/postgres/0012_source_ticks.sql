-- Scheduled sources: as SQLite's migrations/0017_source_ticks.sql (read the reasons
-- there). The compare-and-set runs under the stream's row lock, so of several daemons
-- sharing the database, one runs each tick.
CREATE TABLE source_ticks (
    stream_id bigint PRIMARY KEY REFERENCES streams(id) ON DELETE CASCADE,
    last_tick bigint NOT NULL
);

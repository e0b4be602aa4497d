-- Scheduled sources (a source with `schedule=`, a cron schedule): the last tick each
-- source's command was run for, in ms since 1970. A daemon runs a tick only after the
-- writer has moved this forward to it (a compare-and-set in the writer's transaction), so
-- a tick runs once, and a daemon that starts after missing ticks runs the command once,
-- not once per missed tick.
CREATE TABLE source_ticks (
    stream_id INTEGER PRIMARY KEY REFERENCES streams(id) ON DELETE CASCADE,
    last_tick INTEGER NOT NULL
);

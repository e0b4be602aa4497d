-- Derived streams: a stream whose events a derivation computes from other streams (a jq
-- program over their events, docs/DERIVED.md). The derivation is a durable consumer whose
-- acknowledgement carries its outputs: its input positions, its state and its outputs are
-- written by the writer in one transaction, so after a crash at any moment every output
-- exists exactly once, and the derivation goes on from the positions that committed.

-- One row per derived stream; it goes with its stream.
CREATE TABLE derivations (
    stream_id  INTEGER PRIMARY KEY REFERENCES streams(id) ON DELETE CASCADE,
    definition TEXT    NOT NULL,                -- inputs, program, options: JSON
    positions  TEXT    NOT NULL DEFAULT '{}',   -- {"input": last seq read}: JSON
    state      TEXT,                            -- the operators' state (scan's fold…): JSON
    status     TEXT    NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'stopped')),
    error      TEXT,                            -- why it stopped, or the last error skipped
    processed  INTEGER NOT NULL DEFAULT 0,      -- input events computed
    errors     INTEGER NOT NULL DEFAULT 0,      -- input events whose computation failed
    created_at INTEGER NOT NULL,                -- ms since 1970
    updated_at INTEGER NOT NULL
);

-- Which input event an output came from: 'stream:seq' (':' is never in a stream name);
-- NULL for every event that is not a derivation's output.
ALTER TABLE event_log ADD COLUMN origin TEXT;

-- What people query:  SELECT seq, payload, origin_stream, origin_seq FROM derived_events WHERE stream='big-orders'
CREATE VIEW derived_events AS
    SELECT s.name AS stream,
           e.key - (s.id << 40) AS seq,
           strftime('%Y-%m-%dT%H:%M:%fZ', e.time / 1000.0, 'unixepoch') AS time,
           e.payload AS payload,
           substr(e.origin, 1, instr(e.origin, ':') - 1) AS origin_stream,
           CAST(substr(e.origin, instr(e.origin, ':') + 1) AS INTEGER) AS origin_seq
    FROM derivations AS d
    JOIN streams AS s ON s.id = d.stream_id
    JOIN event_log AS e ON e.key BETWEEN (s.id << 40) AND (s.id << 40) + 1099511627775;

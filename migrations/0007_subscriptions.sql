-- Durable Streams subscriptions (docs/HTTP.md, "Subscriptions"): one row per subscription,
-- its configuration and its wake state (generation, wake id, lease holder and deadline,
-- webhook retry schedule) as the daemon writes them, in JSON, so that a restart resumes
-- them where they were: `SELECT id, json_extract(state, '$.generation') FROM subscriptions`
-- in sqlite3. A write names the revision it changes and is refused if another daemon's
-- write came first (several daemons on one PostgreSQL database). Each linked stream's acknowledged position is a durable consumer of that
-- stream (the `consumers` table), named after the subscription.
CREATE TABLE subscriptions (
    id          TEXT    PRIMARY KEY,
    config      TEXT    NOT NULL,   -- JSON: type, pattern, streams, webhook, wake_stream, lease_ttl_ms, ...
    state       TEXT    NOT NULL,   -- JSON: status, generation, wake, holder, lease, retries
    revision    INTEGER NOT NULL,   -- raised by every write: a write names the one it read
    updated_at  INTEGER NOT NULL    -- ms since 1970
) WITHOUT ROWID;

-- The daemon's signing key (Ed25519) for webhook signatures and callback tokens: kept
-- here so that receivers' cached public keys stay valid across restarts, and so that every
-- daemon sharing a database signs with the same key. One row, named 'webhook'.
CREATE TABLE signing_keys (
    name         TEXT    PRIMARY KEY,
    kid          TEXT    NOT NULL,
    private_key  BLOB    NOT NULL,  -- the raw 32-byte Ed25519 seed
    created_at   INTEGER NOT NULL   -- ms since 1970
) WITHOUT ROWID;

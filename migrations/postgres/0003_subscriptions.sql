-- Durable Streams subscriptions and the daemons' signing key: the same tables as SQLite's
-- migrations/0007_subscriptions.sql (read the reasons there).

CREATE TABLE subscriptions (
    id          text   PRIMARY KEY,
    config      text   NOT NULL,
    state       text   NOT NULL,
    revision    bigint NOT NULL,
    updated_at  bigint NOT NULL
);

CREATE TABLE signing_keys (
    name         text   PRIMARY KEY,
    kid          text   NOT NULL,
    private_key  bytea  NOT NULL,
    created_at   bigint NOT NULL
);

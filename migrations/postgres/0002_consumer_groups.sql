-- Consumer groups: the same tables as SQLite's migrations/0006_consumer_groups.sql (read
-- the reasons there). A group's rows change only under its stream's lock, which every
-- daemon takes before touching the stream, so daemons sharing the database hand each event
-- to one member at a time.

ALTER TABLE streams ADD COLUMN keep_unacked bigint CHECK (keep_unacked IS NULL OR keep_unacked >= 0);

CREATE TABLE groups (
    stream_id       bigint NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    name            text   NOT NULL,
    ack_wait_ms     bigint NOT NULL,
    max_deliver     integer,
    dead_letter     text,
    delivered_seq   bigint NOT NULL,
    delivered       bigint NOT NULL,
    redelivered     bigint NOT NULL,
    dead_lettered   bigint NOT NULL,
    created_at      bigint NOT NULL,
    PRIMARY KEY (stream_id, name)
);

CREATE TABLE group_pending (
    stream_id        bigint  NOT NULL,
    name             text    NOT NULL,
    seq              bigint  NOT NULL,
    member           text,
    last_member      text    NOT NULL,
    deliveries       integer NOT NULL,
    due              bigint  NOT NULL,
    first_delivered  bigint  NOT NULL,
    last_delivered   bigint  NOT NULL,
    PRIMARY KEY (stream_id, name, seq),
    FOREIGN KEY (stream_id, name) REFERENCES groups(stream_id, name) ON DELETE CASCADE
);

CREATE TABLE dead_letters (
    stream        text    NOT NULL,
    seq           bigint  NOT NULL,
    origin        text    NOT NULL,
    origin_seq    bigint  NOT NULL,
    group_name    text    NOT NULL,
    deliveries    integer NOT NULL,
    last_member   text    NOT NULL,
    time          bigint  NOT NULL,
    PRIMARY KEY (stream, seq)
);

/*
 * The ceiling this machine puts on replay's work queue, measured from C: a server that
 * speaks the part of replay's socket protocol `replay-bench --scenarios work-queue` uses
 * (HELLO, PUB, SUB … group=, EVENT, ACK, PING), keeps a consumer group's state as replay's
 * writer does, and commits it in replay's SQLite layout at the same durability, in the
 * cheapest shape there is for it. The bench drives it as it drives replayd (it takes
 * replayd's --socket, --db and --sync), so its figures stand beside replay's and Redis's
 * from the same client code.
 *
 * What it does for each request, in one transaction per batch (group commit):
 *   PUB     appends the event to event_log and updates the stream's row: `+OK <seq>`.
 *   SUB     with group=: the connection joins the stream's group as a member holding at most
 *           max_pending events (default 64): `+OK`.
 *   ACK     removes the event from its member's held events: `+OK`.
 *   then    hands the group's next events to members with room, in turn, and writes the
 *           group's row (its last handed-out sequence number and its held events as a blob
 *           of varints, as replay's `held_runs`).
 * Every answer and EVENT frame of a batch is written after its COMMIT. Events are handed
 * out from memory (replay reads them from the pages its commit wrote), there is no ack
 * wait, no redelivery, no dead letters, no retention, no metrics: what is left is the
 * least any durable work queue does per event.
 *
 *   --writer thread  (the default) one event loop on epoll and one writer thread, as replay
 *                    (whose event loops are two): the event loop reads and parses, hands
 *                    each batch to the writer, and writes what the commit answered; it goes
 *                    on reading while a commit's fsync runs.
 *   --writer inline  one thread, as Redis: it reads what is ready, commits it, answers, and
 *                    reads again; nothing is read during an fsync, and nothing crosses
 *                    threads.
 *
 *   cc -O2 -pthread -o /tmp/workqueue_ceiling tools/workqueue_ceiling.c -lsqlite3
 *   printf '#!/bin/sh\nexec /tmp/workqueue_ceiling --writer thread --migrations %s/migrations "$@"\n' "$PWD" > /tmp/wq-thread
 *   chmod +x /tmp/wq-thread
 *   cd Benchmarks && .build/release/replay-bench --against replay,replay@baseline,redis \
 *       --baseline /tmp/wq-thread --scenarios work-queue --scale 0.6 --rounds 5
 *
 * (`replay@baseline` is this server in replayd's place, taking turns with replayd and Redis.)
 * It serves until SIGTERM or SIGINT, then prints the requests it committed and the mean
 * number a transaction.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ceiling_common.h"
#include "socket_io.h"
#include "sqlite_layout.h"
#include "writer_handoff.h"

#define MAX_CONNECTIONS 1024
#define MAX_STREAMS 16
#define MAX_MEMBERS 64
#define INPUT_SIZE (1 << 20)

typedef enum { PUBLISH, SUBSCRIBE, ACKNOWLEDGE, PING, LEAVE, REFUSE } Kind;

/* One request of a batch, its text (stream name, sid, payload) end to end in the batch's
 * `bytes`. */
typedef struct {
    Kind kind;
    int fd;
    size_t stream, stream_length; /* offsets into bytes */
    size_t payload, payload_length;
    size_t sid, sid_length;
    long max_pending;
    int64_t seq;
} Request;

/* Requests read while another batch commits; then the answers that batch's commit wrote,
 * each a run of `output` for one descriptor, in order. */
typedef struct {
    Request *requests;
    size_t count, capacity;
    char *bytes;
    size_t used, bytes_capacity;
    struct {
        int fd;
        size_t start, length;
    } *answers;
    size_t answer_count, answer_capacity;
    char *output;
    size_t output_used, output_capacity;
} Batch;

typedef struct {
    char input[INPUT_SIZE];
    size_t length;
    PendingOutput output;
} Connection;

typedef struct {
    int fd;
    char sid[65];
    long max_pending, held;
} Member;

/* A stream and its one group: the writer's state, touched by no other thread. */
typedef struct {
    char name[201];
    long id;
    int64_t last_seq, bytes, handed_out;
    char **payloads; /* by sequence number, for handing out */
    int *payload_lengths;
    int64_t payload_capacity;
    int *holder; /* by sequence number: the descriptor holding it, -1 when acknowledged */
    int64_t oldest_held; /* no event before it is held */
    Member members[MAX_MEMBERS];
    int member_count, next_member, has_group, touched;
} Stream;

static Connection *connections[MAX_CONNECTIONS];
static Stream streams[MAX_STREAMS];
static int stream_count;
static int epoll_fd, use_thread = 1;
static sqlite3 *db;
static sqlite3_stmt *insert_statement, *update_statement, *group_statement, *stream_statement;
static long committed, transactions;

/* Requests the event loop reads go to `handoff.filling`; with `--writer thread`, the
 * writer commits the other batch meanwhile (writer_handoff.h). */
static Batch batches[2];
static Handoff handoff;
#define filling ((Batch *)handoff.filling)

static void *grow(void *memory, size_t needed, size_t *capacity, size_t unit) {
    if (needed <= *capacity) return memory;
    while (*capacity < needed) *capacity = *capacity ? *capacity * 2 : 1024;
    return realloc(memory, *capacity * unit);
}

static size_t keep(Batch *batch, const char *text, size_t length) {
    batch->bytes = grow(batch->bytes, batch->used + length, &batch->bytes_capacity, 1);
    memcpy(batch->bytes + batch->used, text, length);
    batch->used += length;
    return batch->used - length;
}

/* Appends `length` bytes for `fd` to the batch's answers (joined to the last run if it is fd's). */
static void answer_to(Batch *batch, int fd, const char *text, size_t length) {
    batch->output = grow(batch->output, batch->output_used + length, &batch->output_capacity, 1);
    memcpy(batch->output + batch->output_used, text, length);
    if (batch->answer_count && batch->answers[batch->answer_count - 1].fd == fd) {
        batch->answers[batch->answer_count - 1].length += length;
    } else {
        batch->answers = grow(batch->answers, batch->answer_count + 1, &batch->answer_capacity, sizeof *batch->answers);
        batch->answers[batch->answer_count].fd = fd;
        batch->answers[batch->answer_count].start = batch->output_used;
        batch->answers[batch->answer_count++].length = length;
    }
    batch->output_used += length;
}

static Stream *stream_named(const char *name, size_t length) {
    for (int s = 0; s < stream_count; s++)
        if (strlen(streams[s].name) == length && memcmp(streams[s].name, name, length) == 0) return &streams[s];
    if (stream_count == MAX_STREAMS || length > 200) return NULL;
    Stream *stream = &streams[stream_count++];
    memcpy(stream->name, name, length);
    stream->id = stream_count;
    stream->oldest_held = 1;
    /* Bound, not formatted into the SQL: the name is the client's. */
    sqlite3_bind_int64(stream_statement, 1, stream->id);
    sqlite3_bind_text(stream_statement, 2, stream->name, -1, SQLITE_STATIC);
    if (sqlite3_step(stream_statement) != SQLITE_DONE) die("stream", db);
    sqlite3_reset(stream_statement);
    return stream;
}

static void put_varint(char *out, size_t *used, uint64_t value) {
    while (value >= 0x80) {
        out[(*used)++] = (char)(value | 0x80);
        value >>= 7;
    }
    out[(*used)++] = (char)value;
}

/* The group's row: its last handed-out event and its held events (the holder's descriptor,
 * standing for replay's member index, and the sequence number after the previous one), as
 * replay writes `held_runs` with every batch that changes the group. */
static void write_group(Stream *stream) {
    static char *blob;
    static size_t capacity;
    while (stream->oldest_held <= stream->handed_out && stream->holder[stream->oldest_held] < 0) stream->oldest_held++;
    size_t used = 0;
    blob = grow(blob, (size_t)(stream->handed_out - stream->oldest_held + 1) * 20 + 16, &capacity, 1);
    int64_t previous = 0;
    for (int64_t seq = stream->oldest_held; seq <= stream->handed_out; seq++) {
        if (stream->holder[seq] < 0) continue;
        put_varint(blob, &used, (uint64_t)stream->holder[seq] % MAX_MEMBERS);
        put_varint(blob, &used, (uint64_t)(seq - previous));
        previous = seq;
    }
    sqlite3_bind_int64(group_statement, 1, stream->id);
    sqlite3_bind_int64(group_statement, 2, stream->handed_out);
    sqlite3_bind_blob(group_statement, 3, blob, (int)used, SQLITE_STATIC);
    if (sqlite3_step(group_statement) != SQLITE_DONE) die("group", db);
    sqlite3_reset(group_statement);
}

/* Hands the group's next events to its members with room, one each in turn. */
static void hand_out(Batch *batch, Stream *stream) {
    char head[512];
    while (stream->handed_out < stream->last_seq && stream->member_count) {
        Member *member = NULL;
        for (int tried = 0; tried < stream->member_count && !member; tried++) {
            Member *candidate = &stream->members[stream->next_member++ % stream->member_count];
            if (candidate->held < candidate->max_pending) member = candidate;
        }
        if (!member) return;
        int64_t seq = ++stream->handed_out;
        stream->holder[seq] = member->fd;
        member->held++;
        int length = snprintf(head, sizeof head, "EVENT %s %s %lld 2026-11-27T00:00:00.000Z %d\r\n", stream->name, member->sid,
                              (long long)seq, stream->payload_lengths[seq]);
        answer_to(batch, member->fd, head, length);
        answer_to(batch, member->fd, stream->payloads[seq], stream->payload_lengths[seq]);
        answer_to(batch, member->fd, "\r\n", 2);
    }
}

static Member *member_of(Stream *stream, int fd, const char *sid, size_t sid_length) {
    for (int m = 0; m < stream->member_count; m++) {
        Member *member = &stream->members[m];
        if (member->fd == fd && strlen(member->sid) == sid_length && memcmp(member->sid, sid, sid_length) == 0) return member;
    }
    return NULL;
}

/* Commits the batch (on the writer thread, or inline). */
static void commit(void *argument) {
    Batch *batch = argument;
    exec(db, "BEGIN IMMEDIATE");
    int64_t millis = 1795000000000 + transactions;
    char text[128];
    for (size_t i = 0; i < batch->count; i++) {
        Request *request = &batch->requests[i];
        const char *bytes = batch->bytes;
        if (request->kind == PING || request->kind == REFUSE) {
            /* Answered in turn, after what the connection sent before. */
            static const char bad[] = "-ERR bad_command this server takes PUB, SUB … group=, ACK and PING\r\n";
            if (request->kind == PING) answer_to(batch, request->fd, "PONG\r\n", 6);
            else answer_to(batch, request->fd, bad, sizeof bad - 1);
            continue;
        }
        if (request->kind == LEAVE) {
            for (int s = 0; s < stream_count; s++)
                for (int m = 0; m < streams[s].member_count; m++)
                    if (streams[s].members[m].fd == request->fd) streams[s].members[m--] = streams[s].members[--streams[s].member_count];
            continue;
        }
        if (request->kind == ACKNOWLEDGE) {
            /* ACK names the subscription, not the stream: the member's. */
            Stream *stream = NULL;
            Member *member = NULL;
            for (int s = 0; s < stream_count && !member; s++)
                if ((member = member_of(&streams[s], request->fd, bytes + request->sid, request->sid_length))) stream = &streams[s];
            if (!member || request->seq < 1 || request->seq > stream->handed_out || stream->holder[request->seq] != request->fd) {
                answer_to(batch, request->fd, "-ERR not_held the member does not hold that event\r\n", 51);
                continue;
            }
            stream->holder[request->seq] = -1;
            member->held--;
            stream->touched = 1;
            answer_to(batch, request->fd, "+OK\r\n", 5);
            continue;
        }
        Stream *stream = stream_named(bytes + request->stream, request->stream_length);
        if (!stream) {
            answer_to(batch, request->fd, "-ERR limit too many streams\r\n", 29);
            continue;
        }
        if (request->kind == PUBLISH) {
            int64_t seq = ++stream->last_seq;
            if (seq + 1 >= stream->payload_capacity) {
                stream->payload_capacity = stream->payload_capacity ? stream->payload_capacity * 2 : 1 << 16;
                stream->payloads = realloc(stream->payloads, stream->payload_capacity * sizeof(char *));
                stream->payload_lengths = realloc(stream->payload_lengths, stream->payload_capacity * sizeof(int));
                stream->holder = realloc(stream->holder, stream->payload_capacity * sizeof(int));
            }
            stream->payloads[seq] = malloc(request->payload_length);
            memcpy(stream->payloads[seq], bytes + request->payload, request->payload_length);
            stream->payload_lengths[seq] = (int)request->payload_length;
            stream->bytes += request->payload_length;
            append_event(db, insert_statement, stream->id, seq, millis, bytes + request->payload, (int)request->payload_length);
            stream->touched = 1;
            answer_to(batch, request->fd, text, snprintf(text, sizeof text, "+OK %lld\r\n", (long long)seq));
        } else {
            if (!stream->has_group) {
                stream->has_group = 1;
                char row[256];
                snprintf(row, sizeof row,
                         "INSERT INTO groups (stream_id, name, ack_wait_ms, delivered_seq, delivered, redelivered, dead_lettered, "
                         "created_at) VALUES (%ld, 'g', 60000, 0, 0, 0, 0, 0)",
                         stream->id);
                exec(db, row);
            }
            if (stream->member_count == MAX_MEMBERS || request->sid_length > 64) {
                answer_to(batch, request->fd, "-ERR limit too many members\r\n", 29);
                continue;
            }
            Member *member = &stream->members[stream->member_count++];
            member->fd = request->fd;
            memcpy(member->sid, bytes + request->sid, request->sid_length);
            member->sid[request->sid_length] = 0;
            member->max_pending = request->max_pending;
            member->held = 0;
            stream->touched = 1; /* the backlog is handed out to it in this batch */
            answer_to(batch, request->fd, "+OK\r\n", 5);
        }
    }
    for (int s = 0; s < stream_count; s++) {
        Stream *stream = &streams[s];
        if (!stream->touched) continue;
        hand_out(batch, stream);
        update_stream(db, update_statement, stream->id, stream->last_seq, stream->bytes, millis);
        if (stream->has_group) write_group(stream);
        stream->touched = 0;
    }
    exec(db, "COMMIT");
}

static Request *new_request(int fd, Kind kind) {
    Batch *batch = filling;
    batch->requests = grow(batch->requests, batch->count + 1, &batch->capacity, sizeof(Request));
    Request *request = &batch->requests[batch->count++];
    memset(request, 0, sizeof *request);
    request->kind = kind;
    request->fd = fd;
    return request;
}

static void close_connection(int fd) {
    Connection *connection = connections[fd];
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL);
    free(connection->output.bytes);
    free(connection);
    connections[fd] = NULL;
    close(fd);
    new_request(fd, LEAVE); /* before any later connection on this descriptor can join */
}

static void send_bytes(int fd, const char *bytes, size_t length) {
    if (!connections[fd]) return; /* closed while its answer was committed */
    if (output_send(epoll_fd, fd, &connections[fd]->output, bytes, length) < 0) close_connection(fd);
}

static void flush_pending(int fd) {
    if (output_flush(epoll_fd, fd, &connections[fd]->output) < 0) close_connection(fd);
}

/* The words of `line` (at most `max`), each as start and length. */
static int split(const char *line, size_t length, const char **words, size_t *lengths, int max) {
    int count = 0;
    size_t i = 0;
    while (i < length && count < max) {
        while (i < length && line[i] == ' ') i++;
        if (i == length) break;
        words[count] = line + i;
        while (i < length && line[i] != ' ') i++;
        lengths[count] = line + i - words[count];
        count++;
    }
    return count;
}

/* Parses the complete commands at the front of fd's input into the filling batch. */
static void take_commands(int fd) {
    Connection *connection = connections[fd];
    size_t at = 0;
    for (;;) {
        char *end = memchr(connection->input + at, '\n', connection->length - at);
        if (!end) break;
        const char *line = connection->input + at;
        size_t line_length = end - line;
        if (line_length && line[line_length - 1] == '\r') line_length--;
        const char *words[12];
        size_t lengths[12];
        int count = split(line, line_length, words, lengths, 12);
        size_t next = end - connection->input + 1;
        if (count == 3 && lengths[0] == 3 && !strncasecmp(words[0], "PUB", 3)) {
            long size = atol(words[2]);
            if (size < 0 || size > INPUT_SIZE / 2) {
                new_request(fd, REFUSE);
                at = next;
                continue;
            }
            if (connection->length < next + size + 2) break; /* the payload is not all here */
            Request *request = new_request(fd, PUBLISH);
            request->stream_length = lengths[1];
            request->stream = keep(filling, words[1], lengths[1]);
            request->payload_length = size;
            request->payload = keep(filling, connection->input + next, size);
            next += size + (connection->input[next + size] == '\r' ? 2 : 1);
        } else if (count >= 4 && lengths[0] == 3 && !strncasecmp(words[0], "SUB", 3)) {
            Request *request = new_request(fd, SUBSCRIBE);
            request->stream_length = lengths[1];
            request->stream = keep(filling, words[1], lengths[1]);
            request->sid_length = lengths[2];
            request->sid = keep(filling, words[2], lengths[2]);
            request->max_pending = 64;
            for (int w = 3; w < count; w++)
                if (lengths[w] > 12 && !strncmp(words[w], "max_pending=", 12)) request->max_pending = atol(words[w] + 12);
        } else if (count >= 3 && lengths[0] == 3 && !strncasecmp(words[0], "ACK", 3)) {
            Request *request = new_request(fd, ACKNOWLEDGE);
            request->sid_length = lengths[1];
            request->sid = keep(filling, words[1], lengths[1]);
            request->seq = atoll(words[2]);
        } else if (count == 1 && lengths[0] == 4 && !strncasecmp(words[0], "PING", 4)) {
            new_request(fd, PING);
        } else if (count) {
            new_request(fd, REFUSE);
        }
        at = next;
    }
    connection->length -= at;
    memmove(connection->input, connection->input + at, connection->length);
}

static void read_connection(int fd) {
    Connection *connection = connections[fd];
    if (input_read(fd, connection->input, &connection->length, INPUT_SIZE) < 0) {
        close_connection(fd);
        return;
    }
    take_commands(fd);
}

/* Writes a committed batch's answers (on the event loop). */
static void send_answers(void *argument) {
    Batch *batch = argument;
    for (size_t i = 0; i < batch->answer_count; i++)
        send_bytes(batch->answers[i].fd, batch->output + batch->answers[i].start, batch->answers[i].length);
    committed += batch->count;
    transactions++;
    batch->count = 0;
    batch->used = 0;
    batch->answer_count = 0;
    batch->output_used = 0;
}

static void hand_off(void) {
    if (filling->count) handoff_submit(&handoff);
}

int main(int argc, char **argv) {
    layout_tool = "workqueue_ceiling";
    const char *socket_path = "/tmp/workqueue-ceiling.sock", *sync = "FULL", *migrations = "migrations", *path = NULL;
    for (int i = 1; i < argc; i += 2) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            fprintf(stderr, "usage: see the comment at the top of tools/workqueue_ceiling.c\n");
            return 64;
        }
        if (!strcmp(argv[i], "--socket")) socket_path = value;
        else if (!strcmp(argv[i], "--db")) path = value;
        else if (!strcmp(argv[i], "--writer")) use_thread = strcmp(value, "inline") != 0;
        else if (!strcmp(argv[i], "--sync")) sync = !strcmp(value, "normal") ? "NORMAL" : "FULL";
        else if (!strcmp(argv[i], "--migrations")) migrations = value;
        else if (!strcmp(argv[i], "--default-capacity")) continue; /* replayd's, from the bench: no retention here */
        else {
            fprintf(stderr, "workqueue_ceiling: unknown option %s\n", argv[i]);
            return 64;
        }
    }
    char default_path[4096];
    if (!path) {
        snprintf(default_path, sizeof default_path, "/tmp/workqueue-ceiling-%d.sqlite", (int)getpid());
        path = default_path;
    }
    char *schema = read_schema(migrations);
    db = open_layout(path, schema, sync, 0, &insert_statement, &update_statement);
    free(schema);
    if (sqlite3_prepare_v2(db, "UPDATE groups SET delivered_seq = ?2, held_runs = ?3 WHERE stream_id = ?1 AND name = 'g'", -1,
                           &group_statement, NULL) != SQLITE_OK)
        die("prepare", db);
    if (sqlite3_prepare_v2(db, "INSERT INTO streams (id, name, created_at) VALUES (?, ?, '2026-11-27T00:00:00.000Z')", -1, &stream_statement,
                           NULL) != SQLITE_OK)
        die("prepare", db);

    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path);
    unlink(socket_path);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 1024) < 0) {
        perror("workqueue_ceiling: listen");
        return 1;
    }
    epoll_fd = serve_listener(listener);
    handoff_start(&handoff, &batches[0], &batches[1], commit, send_answers, use_thread, epoll_fd);
    signal(SIGPIPE, SIG_IGN);

    static const char hello[] = "HELLO replay 0.1.0 proto=1 max_payload=1048576\r\n";
    struct epoll_event ready[256];
    while (!stopping) {
        int count = epoll_wait(epoll_fd, ready, 256, -1);
        for (int i = 0; i < count; i++) {
            int fd = ready[i].data.fd;
            if (fd == listener) {
                for (int client; (client = accept_ready(listener, epoll_fd, MAX_CONNECTIONS)) >= 0;) {
                    connections[client] = calloc(1, sizeof(Connection));
                    send_bytes(client, hello, sizeof hello - 1);
                }
            } else if (fd == handoff.wake_fd) {
                handoff_woken(&handoff);
            } else if (connections[fd]) {
                if (ready[i].events & EPOLLOUT) flush_pending(fd);
                if (connections[fd] && (ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) read_connection(fd);
            }
        }
        hand_off();
    }
    fprintf(stderr, "workqueue_ceiling: %ld requests committed in %ld transactions (%.1f a transaction)\n", committed, transactions,
            transactions ? (double)committed / transactions : 0.0);
    unlink(socket_path);
    handoff_wait_idle(&handoff);
    sqlite3_finalize(group_statement);
    sqlite3_finalize(stream_statement);
    if (path == default_path) remove_layout(db, path, insert_statement, update_statement);
    return 0;
}

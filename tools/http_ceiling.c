/*
 * The ceiling this machine puts on replay's HTTP appends, measured from C: what the load of
 * docs/PERFORMANCE.md's HTTP table (`wrk -t2 -c16 -d8s --latency -s tools/http_post.lua`,
 * 100-byte POSTs) gets from a server that does the least any Durable Streams server must do
 * for a POST at `--sync full`, in the cheapest shape there is for it. (The reference server
 * is JavaScript and in memory; replay is Swift with SQLite; this says what is left for
 * either once the language and the framework are taken away.)
 *
 * One event loop on epoll; HTTP/1.1 with keep-alive; each request's head scanned only for
 * its Content-Length; each POST's body appended to stream 1 in replay's SQLite layout
 * (tools/sqlite_layout.h); every POST read in one pass over the ready connections is
 * committed in one transaction (group commit, as replay's writer does), then answered
 * `204 No Content` with its Stream-Next-Offset. A PUT answers 201 and appends nothing; any
 * other request, 404. No header validation, no content types, no metrics, no Date header.
 *
 *   --writer thread  (the default) commits on a second thread, as replay does: the event loop
 *                    goes on reading while a commit's fsync runs, and the POSTs read meanwhile
 *                    form the next transaction.
 *   --writer inline  commits on the event loop's own thread: no hand-off, nothing read during
 *                    an fsync.
 *   --gather-us N    lets a transaction wait up to N µs for more POSTs once it has one,
 *                    unless every open connection has one in it already (default 0: commit
 *                    what one pass over the ready connections read).
 *   --store none     answers the same with no SQLite at all: the sockets, the parsing and
 *                    wrk alone, the bound of any HTTP server here.
 *
 *   cc -O2 -pthread -o /tmp/http_ceiling tools/http_ceiling.c -lsqlite3
 *   /tmp/http_ceiling [--port 18095] [--writer thread|inline] [--gather-us 0] [--store sqlite|none]
 *                     [--sync full|normal] [--migrations migrations] [--folder /tmp]
 *   curl -X PUT http://127.0.0.1:18095/v1/stream/bench
 *   wrk -t2 -c16 -d8s --latency -s tools/http_post.lua http://127.0.0.1:18095/v1/stream/bench
 *
 * It serves until killed and prints, on SIGINT or SIGTERM, the POSTs it committed and the
 * mean number a transaction.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>

#include "ceiling_common.h"
#include "socket_io.h"
#include "sqlite_layout.h"
#include "writer_handoff.h"

#define MAX_CONNECTIONS 4096
#define INPUT_SIZE 65536
/* A connection has at most one POST awaiting its commit (it reads no further request until
 * that one is answered), so a transaction holds at most one POST a connection. */
#define MAX_BATCH MAX_CONNECTIONS

typedef struct {
    char input[INPUT_SIZE];
    size_t length;
    int awaiting_commit; /* a POST of this connection is in a transaction: read no further request */
    PendingOutput output;
} Connection;

/* The POSTs of one transaction: whose they are and their bodies, end to end in `bodies`. */
typedef struct {
    int fds[MAX_BATCH];
    size_t starts[MAX_BATCH], lengths[MAX_BATCH];
    int64_t seqs[MAX_BATCH];
    long count;
    char *bodies;
    size_t used, capacity;
} Batch;

static Connection *connections[MAX_CONNECTIONS];
static int epoll_fd;
static sqlite3 *db;
static sqlite3_stmt *insert_statement, *update_statement;
static int64_t last_seq, bytes;
static long committed, transactions;

/* The POSTs the event loop reads go to `handoff.filling`; with `--writer thread`, the
 * writer commits the other batch meanwhile (writer_handoff.h). */
static Batch batches[2];
static Handoff handoff;
#define filling ((Batch *)handoff.filling)
static int use_thread = 1, use_store = 1;
/* How long a transaction waits for more POSTs once it has one, unless every open connection
 * already has one in it (the load is closed: nothing else can come). */
static double gather_seconds, filling_since;
static long open_connections;

/* Commits the batch (on the writer thread, or inline). */
static void commit(void *argument) {
    Batch *batch = argument;
    if (!use_store) {
        for (long i = 0; i < batch->count; i++) batch->seqs[i] = ++last_seq;
        return;
    }
    exec(db, "BEGIN IMMEDIATE");
    int64_t millis = 1795000000000 + transactions;
    for (long i = 0; i < batch->count; i++) {
        batch->seqs[i] = ++last_seq;
        bytes += batch->lengths[i];
        append_event(db, insert_statement, 1, last_seq, millis, batch->bodies + batch->starts[i], (int)batch->lengths[i]);
    }
    update_stream(db, update_statement, 1, last_seq, bytes, millis);
    exec(db, "COMMIT");
}

static void close_connection(int fd) {
    Connection *connection = connections[fd];
    if (connection->awaiting_commit) {
        /* Its POST is in a transaction: the answer finds the descriptor closed and is dropped
         * there (close_connection is called again then). */
        connection->awaiting_commit = -1;
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL);
        return;
    }
    free(connection->output.bytes);
    free(connection);
    connections[fd] = NULL;
    open_connections--;
    close(fd);
}

static void send_answer(int fd, const char *answer, size_t length) {
    if (output_send(epoll_fd, fd, &connections[fd]->output, answer, length) < 0) close_connection(fd);
}

static void flush_pending(int fd) {
    if (output_flush(epoll_fd, fd, &connections[fd]->output) < 0) close_connection(fd);
}

/* The Content-Length of the head `head[0..length)`, 0 without one. */
static long content_length(const char *head, size_t length) {
    static const char name[] = "\r\ncontent-length:";
    for (size_t i = 0; i + sizeof name - 1 < length; i++)
        if (strncasecmp(head + i, name, sizeof name - 1) == 0) return atol(head + i + sizeof name - 1);
    return 0;
}

/* Takes the complete requests at the front of `fd`'s input, up to its first POST. */
static void take_requests(int fd) {
    Connection *connection = connections[fd];
    while (connection && !connection->awaiting_commit) {
        char *end = memmem(connection->input, connection->length, "\r\n\r\n", 4);
        if (!end) return;
        size_t head = end - connection->input + 4;
        long body = content_length(connection->input, head);
        if (body < 0 || head + body > INPUT_SIZE) {
            static const char too_large[] = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            send_answer(fd, too_large, sizeof too_large - 1);
            close_connection(fd);
            return;
        }
        if (connection->length < head + body) return;
        if (strncmp(connection->input, "POST ", 5) == 0) {
            Batch *batch = filling;
            if (batch->used + body > batch->capacity) batch->bodies = realloc(batch->bodies, batch->capacity = (batch->used + body) * 2);
            memcpy(batch->bodies + batch->used, connection->input + head, body);
            if (!batch->count) filling_since = seconds();
            batch->fds[batch->count] = fd;
            batch->starts[batch->count] = batch->used;
            batch->lengths[batch->count++] = body;
            batch->used += body;
            connection->awaiting_commit = 1;
        } else if (strncmp(connection->input, "PUT ", 4) == 0) {
            static const char created[] = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
            send_answer(fd, created, sizeof created - 1);
        } else {
            static const char not_found[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
            send_answer(fd, not_found, sizeof not_found - 1);
        }
        connection = connections[fd];
        if (!connection) return;
        connection->length -= head + body;
        memmove(connection->input, connection->input + head + body, connection->length);
    }
}

static void read_connection(int fd) {
    Connection *connection = connections[fd];
    if (connection->length == INPUT_SIZE) return; /* full behind a POST awaiting its commit */
    if (input_read(fd, connection->input, &connection->length, INPUT_SIZE) < 0) {
        close_connection(fd);
        return;
    }
    take_requests(fd);
}

/* Writes a committed batch's answers (on the event loop). */
static void answer(void *argument) {
    Batch *batch = argument;
    for (long i = 0; i < batch->count; i++) {
        int fd = batch->fds[i];
        Connection *connection = connections[fd];
        int closed = connection->awaiting_commit < 0;
        connection->awaiting_commit = 0;
        if (closed) {
            close_connection(fd);
            continue;
        }
        char text[128];
        int length = snprintf(text, sizeof text, "HTTP/1.1 204 No Content\r\nStream-Next-Offset: %016lld_%016lld\r\n\r\n",
                              (long long)batch->seqs[i], 0LL);
        send_answer(fd, text, length);
        take_requests(fd);
    }
    committed += batch->count;
    transactions++;
    batch->count = 0;
    batch->used = 0;
}

/* Seconds until the filling transaction must be committed (0: now), -1 when it is empty. */
static double time_to_commit(void) {
    if (!filling->count) return -1;
    if (filling->count >= open_connections) return 0;
    double left = filling_since + gather_seconds - seconds();
    return left > 0 ? left : 0;
}

static void hand_off(void) {
    if (time_to_commit() == 0) handoff_submit(&handoff);
}

int main(int argc, char **argv) {
    layout_tool = "http_ceiling";
    long port = 18095;
    const char *sync = "FULL", *migrations = "migrations", *folder = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i += 2) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            fprintf(stderr, "usage: see the comment at the top of tools/http_ceiling.c\n");
            return 64;
        }
        if (!strcmp(argv[i], "--port")) port = atol(value);
        else if (!strcmp(argv[i], "--writer")) use_thread = strcmp(value, "inline") != 0;
        else if (!strcmp(argv[i], "--gather-us")) gather_seconds = atol(value) / 1e6;
        else if (!strcmp(argv[i], "--store")) use_store = strcmp(value, "none") != 0;
        else if (!strcmp(argv[i], "--sync")) sync = !strcmp(value, "normal") ? "NORMAL" : "FULL";
        else if (!strcmp(argv[i], "--migrations")) migrations = value;
        else if (!strcmp(argv[i], "--folder")) folder = value;
        else {
            fprintf(stderr, "http_ceiling: unknown option %s\n", argv[i]);
            return 64;
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/http-ceiling-%d.sqlite", folder, (int)getpid());
    if (use_store) {
        char *schema = read_schema(migrations);
        db = open_layout(path, schema, sync, 1, &insert_statement, &update_statement);
        free(schema);
    }

    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int yes = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 1024) < 0) {
        perror("http_ceiling: listen");
        return 1;
    }
    epoll_fd = serve_listener(listener);
    handoff_start(&handoff, &batches[0], &batches[1], commit, answer, use_thread, epoll_fd);
    fprintf(stderr, "http_ceiling: 127.0.0.1:%ld, store %s, writer %s\n", port, use_store ? sync : "none", use_thread ? "thread" : "inline");

    struct epoll_event ready[256];
    while (!stopping) {
        double wait = time_to_commit();
        if (handoff_is_busy(&handoff)) wait = -1; /* the writer's answer comes first */
        struct timespec timeout = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
        int count = epoll_pwait2(epoll_fd, ready, 256, wait < 0 ? NULL : &timeout, NULL);
        for (int i = 0; i < count; i++) {
            int fd = ready[i].data.fd;
            if (fd == listener) {
                for (int client; (client = accept_ready(listener, epoll_fd, MAX_CONNECTIONS)) >= 0;) {
                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
                    connections[client] = calloc(1, sizeof(Connection));
                    open_connections++;
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
    fprintf(stderr, "http_ceiling: %ld POSTs committed in %ld transactions (%.1f a transaction)\n", committed, transactions,
            transactions ? (double)committed / transactions : 0.0);
    if (!use_store) return 0;
    handoff_wait_idle(&handoff);
    remove_layout(db, path, insert_statement, update_statement);
    return 0;
}

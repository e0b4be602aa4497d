/*
 * The ceiling PostgreSQL itself puts on replay's PostgreSQL store on this machine, measured
 * from C with libpq in pipeline mode, so that the client is not what bounds it.
 *
 * Appends, in replay's layout exactly: a fresh database made by migrations/postgres/, one
 * stream per connection, and per transaction what replay's writer must do at the least:
 * BEGIN, one `INSERT INTO event_log ... SELECT FROM unnest($streams, $seqs, $times,
 * $payloads)` with every event of the batch (binary arrays, as postgres-nio sends them),
 * the UPDATE of the stream's row, COMMIT, all sent in one round trip and waited for
 * together (`synchronous_commit` as the server has it: on, unless said otherwise). Each
 * connection is a process of its own; the figure is all events over the slowest one's time.
 *
 * Reads: one connection reads one stream from its start in keyset pages (`seq BETWEEN
 * $from AND $from + $page - 1 ORDER BY seq LIMIT $page`, binary results: the range bounds
 * the rows, so the plan is cheap with or without statistics), each page asked for when the
 * previous one has arrived.
 *
 * No socket of replay's, no framing, no acknowledgements: no figure of replay-pg can pass
 * these. Each combination is measured in turn, interleaved over rounds; medians are printed.
 *
 *   cc -O2 -o /tmp/postgres_ceiling tools/postgres_ceiling.c -I/usr/include/postgresql -lpq
 *   eval "$(tools/postgres-cluster.sh start)"
 *   /tmp/postgres_ceiling --url "$REPLAY_TEST_POSTGRES" [--events 200000] [--rounds 3]
 *                         [--connections 1,2,8] [--batches 40,100,1000]
 *                         [--pages 512,4096] [--read-events 500000]
 *                         [--migrations migrations/postgres]
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ceiling_common.h"

#define PAYLOAD 100
#define INT8OID 20
#define BYTEAOID 17

static const char *url;
static char database[64];

/* A connection to `url`, to the database named (NULL: the one the URL names). */
static PGconn *connect_to(const char *name) {
    const char *keys[] = {"dbname", name ? "dbname" : NULL, NULL};
    const char *values[] = {url, name, NULL};
    PGconn *connection = PQconnectdbParams(keys, values, 1);
    if (PQstatus(connection) != CONNECTION_OK) {
        fprintf(stderr, "postgres_ceiling: %s", PQerrorMessage(connection));
        exit(1);
    }
    return connection;
}

static void run(PGconn *connection, const char *sql) {
    PGresult *result = PQexec(connection, sql);
    if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK) {
        fprintf(stderr, "postgres_ceiling: %s: %s", sql, PQerrorMessage(connection));
        exit(1);
    }
    PQclear(result);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int is_sql(const struct dirent *entry) {
    size_t length = strlen(entry->d_name);
    return length > 4 && strcmp(entry->d_name + length - 4, ".sql") == 0;
}

/* A new database with replay's schema, made by the .sql files of `folder` in order. */
static void create_database(const char *folder) {
    snprintf(database, sizeof database, "replay_ceiling_%d", (int)getpid());
    PGconn *admin = connect_to(NULL);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", database);
    run(admin, sql);
    PQfinish(admin);
    PGconn *connection = connect_to(database);
    struct dirent **entries;
    int count = scandir(folder, &entries, is_sql, by_name);
    if (count <= 0) {
        fprintf(stderr, "postgres_ceiling: no .sql files in %s (--migrations)\n", folder);
        exit(1);
    }
    for (int i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, entries[i]->d_name);
        FILE *file = fopen(path, "rb");
        if (!file) {
            perror(path);
            exit(1);
        }
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        rewind(file);
        char *script = malloc(size + 1);
        script[fread(script, 1, size, file)] = 0;
        fclose(file);
        run(connection, script);
        free(script);
        free(entries[i]);
    }
    free(entries);
    PQfinish(connection);
}

static void drop_database(void) {
    PGconn *admin = connect_to(NULL);
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", database);
    run(admin, sql);
    PQfinish(admin);
}

/* A one-dimensional binary array (PostgreSQL's array_send layout) of `count` elements. */
typedef struct {
    char *bytes;
    size_t size, capacity;
} Buffer;

static void put(Buffer *buffer, const void *bytes, size_t size) {
    while (buffer->size + size > buffer->capacity) buffer->bytes = realloc(buffer->bytes, buffer->capacity = buffer->capacity * 2 + 64);
    memcpy(buffer->bytes + buffer->size, bytes, size);
    buffer->size += size;
}

static void put32(Buffer *buffer, int32_t value) {
    uint32_t big = htonl((uint32_t)value);
    put(buffer, &big, 4);
}

static void put64(Buffer *buffer, int64_t value) {
    put32(buffer, (int32_t)((uint64_t)value >> 32));
    put32(buffer, (int32_t)(value & 0xffffffff));
}

static void array_header(Buffer *buffer, int32_t type, int32_t count) {
    buffer->size = 0;
    put32(buffer, 1);
    put32(buffer, 0);
    put32(buffer, type);
    put32(buffer, count);
    put32(buffer, 1);
}

static PGresult *next_result(PGconn *connection) {
    PGresult *result = PQgetResult(connection);
    ExecStatusType status = result ? PQresultStatus(result) : PGRES_COMMAND_OK;
    if (status == PGRES_FATAL_ERROR) {
        fprintf(stderr, "postgres_ceiling: %s", PQerrorMessage(connection));
        exit(1);
    }
    return result;
}

/* Reads the results of one pipelined transaction (four statements and the sync). */
static void drain(PGconn *connection, int statements) {
    for (int i = 0; i < statements; i++) {
        PGresult *result;
        while ((result = next_result(connection)) != NULL) PQclear(result);
    }
    PGresult *sync = next_result(connection);
    if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
        fprintf(stderr, "postgres_ceiling: expected the pipeline's sync\n");
        exit(1);
    }
    PQclear(sync);
}

/* One connection appending `events` to stream `stream`, `batch` per transaction. */
static void append(long stream, long events, long batch) {
    PGconn *connection = connect_to(database);
    if (!PQenterPipelineMode(connection)) {
        fprintf(stderr, "postgres_ceiling: no pipeline mode: %s", PQerrorMessage(connection));
        exit(1);
    }
    Buffer streams = {0}, seqs = {0}, times = {0}, payloads = {0};
    static const char payload[PAYLOAD] = {0};
    const char *insert =
        "INSERT INTO event_log (stream_id, seq, time, payload) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bytea[])";
    const char *update =
        "UPDATE streams SET first_seq = 1, last_seq = $1, event_count = $1, byte_count = $2, terminal = NULL, terminal_message = NULL, "
        "terminal_at = NULL, last_time = $3, writer_seq = NULL, deleted_at = NULL WHERE id = $4";
    int64_t last = 0, millis = 1795000000000;
    for (long written = 0; written < events;) {
        long count = events - written < batch ? events - written : batch;
        millis++;
        array_header(&streams, INT8OID, count);
        array_header(&seqs, INT8OID, count);
        array_header(&times, INT8OID, count);
        array_header(&payloads, BYTEAOID, count);
        for (long i = 0; i < count; i++) {
            put32(&streams, 8), put64(&streams, stream);
            put32(&seqs, 8), put64(&seqs, ++last);
            put32(&times, 8), put64(&times, millis);
            put32(&payloads, PAYLOAD), put(&payloads, payload, PAYLOAD);
        }
        const char *values[] = {streams.bytes, seqs.bytes, times.bytes, payloads.bytes};
        int lengths[] = {(int)streams.size, (int)seqs.size, (int)times.size, (int)payloads.size};
        int formats[] = {1, 1, 1, 1};
        char text[4][32];
        snprintf(text[0], 32, "%lld", (long long)last);
        snprintf(text[1], 32, "%lld", (long long)(last * PAYLOAD));
        snprintf(text[2], 32, "%lld", (long long)millis);
        snprintf(text[3], 32, "%ld", stream);
        const char *row[] = {text[0], text[1], text[2], text[3]};
        if (!PQsendQueryParams(connection, "BEGIN", 0, NULL, NULL, NULL, NULL, 0)
            || !PQsendQueryParams(connection, insert, 4, NULL, values, lengths, formats, 0)
            || !PQsendQueryParams(connection, update, 4, NULL, row, NULL, NULL, 0)
            || !PQsendQueryParams(connection, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) || !PQpipelineSync(connection)) {
            fprintf(stderr, "postgres_ceiling: send: %s", PQerrorMessage(connection));
            exit(1);
        }
        drain(connection, 4);
        written += count;
    }
    PQfinish(connection);
}

/* Events per second for `connections` processes each appending to its own stream. */
static double measure_appends(long connections, long events, long batch) {
    PGconn *connection = connect_to(database);
    run(connection, "SET client_min_messages = warning");
    run(connection, "TRUNCATE event_log, streams CASCADE");
    for (long s = 1; s <= connections; s++) {
        char sql[160];
        snprintf(sql, sizeof sql, "INSERT INTO streams (id, name, created_at) VALUES (%ld, 's%ld', '2026-11-25T00:00:00.000Z')", s, s);
        run(connection, sql);
    }
    PQfinish(connection);
    long each = events / connections;
    double start = seconds();
    for (long s = 1; s <= connections; s++) {
        pid_t child = fork();
        if (child == 0) {
            append(s, each, batch);
            _exit(0);
        }
        if (child < 0) {
            perror("fork");
            exit(1);
        }
    }
    int status, failed = 0;
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed) exit(1);
    return each * connections / (seconds() - start);
}

/* Events per second for one reader of a stream of `events`, `page` rows per query. */
static double measure_reads(long events, long page) {
    PGconn *connection = connect_to(database);
    if (!PQenterPipelineMode(connection)) exit(1);
    const char *select = "SELECT seq, time, payload FROM event_log WHERE stream_id = 1 AND seq BETWEEN $1 AND $2 ORDER BY seq LIMIT $3";
    long read = 0;
    long long from = 1;
    double start = seconds();
    while (read < events) {
        char text[3][32];
        snprintf(text[0], 32, "%lld", from);
        snprintf(text[1], 32, "%lld", from + page - 1);
        snprintf(text[2], 32, "%ld", page);
        const char *values[] = {text[0], text[1], text[2]};
        if (!PQsendQueryParams(connection, select, 3, NULL, values, NULL, NULL, 1) || !PQpipelineSync(connection)) exit(1);
        PGresult *result = next_result(connection);
        int rows = PQntuples(result);
        long long bytes = 0;
        for (int r = 0; r < rows; r++) bytes += PQgetlength(result, r, 2);
        if (rows == 0 || bytes < (long long)rows * PAYLOAD) {
            fprintf(stderr, "postgres_ceiling: read %d rows at %lld\n", rows, from);
            exit(1);
        }
        const unsigned char *seq = (const unsigned char *)PQgetvalue(result, rows - 1, 0);
        uint64_t last = 0;
        for (int b = 0; b < 8; b++) last = last << 8 | seq[b];
        from = (long long)last + 1;
        read += rows;
        PQclear(result);
        while ((result = next_result(connection)) != NULL) PQclear(result);
        PQclear(next_result(connection)); /* the sync */
    }
    double rate = read / (seconds() - start);
    PQfinish(connection);
    return rate;
}

int main(int argc, char **argv) {
    long events = 200000, read_events = 500000, rounds = 3;
    const char *migrations = "migrations/postgres";
    long connections[MAX_LIST] = {1, 2, 8}, batches[MAX_LIST] = {40, 100, 1000}, pages[MAX_LIST] = {512, 4096};
    int connection_count = 3, batch_count = 3, page_count = 2;
    url = getenv("REPLAY_TEST_POSTGRES");
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            fprintf(stderr, "usage: see the comment at the top of tools/postgres_ceiling.c\n");
            return 64;
        }
        if (!strcmp(argv[i], "--url")) url = value;
        else if (!strcmp(argv[i], "--events")) events = atol(value);
        else if (!strcmp(argv[i], "--read-events")) read_events = atol(value);
        else if (!strcmp(argv[i], "--rounds")) rounds = atol(value);
        else if (!strcmp(argv[i], "--connections")) connection_count = parse_list(value, connections);
        else if (!strcmp(argv[i], "--batches")) batch_count = parse_list(value, batches);
        else if (!strcmp(argv[i], "--pages")) page_count = parse_list(value, pages);
        else if (!strcmp(argv[i], "--migrations")) migrations = value;
        else {
            fprintf(stderr, "postgres_ceiling: unknown option %s\n", argv[i]);
            return 64;
        }
        i++;
    }
    if (!url) {
        fprintf(stderr, "postgres_ceiling: --url or REPLAY_TEST_POSTGRES names the server\n");
        return 64;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || events < 1 || read_events < 1) {
        fprintf(stderr, "postgres_ceiling: --rounds 1...64, --events and --read-events above 0\n");
        return 64;
    }
    create_database(migrations);
    static double appends[MAX_LIST][MAX_LIST][MAX_ROUNDS], reads[MAX_LIST][MAX_ROUNDS];
    for (long round = 0; round < rounds; round++) {
        for (int b = 0; b < batch_count; b++)
            for (int c = 0; c < connection_count; c++) appends[c][b][round] = measure_appends(connections[c], events, batches[b]);
        measure_appends(1, read_events, 1000);
        for (int p = 0; p < page_count; p++) reads[p][round] = measure_reads(read_events, pages[p]);
    }
    drop_database();
    printf("PostgreSQL appends, 100-byte events, one stream per connection, median of %ld interleaved rounds (events/s)\n", rounds);
    print_medians("connections", connections, connection_count, batches, batch_count, appends, rounds);
    printf("PostgreSQL keyset reads of one stream of %ld events, one connection (events/s)\n", read_events);
    for (int p = 0; p < page_count; p++) printf("%6ld per page %12.0f\n", pages[p], median(reads[p], rounds));
    return 0;
}

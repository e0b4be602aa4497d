/*
 * The ceiling SQLite itself puts on replay's publish path on this machine, measured from C
 * (a loop in Python measures Python: tools/sqlite_ceiling.py gave 272,000-331,000 events/s
 * where this gives 550,000 and more for the same layout).
 *
 * Replay's layout exactly: a fresh database made by the .sql files of migrations/, WAL, the given
 * synchronous mode; per transaction (BEGIN IMMEDIATE ... COMMIT) one prepared INSERT into
 * event_log per event, keyed (stream id << 40) | seq, and the UPDATE of each touched
 * stream's row, as replay's writer does. The events of a transaction are spread over the
 * streams in turn, as the writer's batches are when that many connections publish at once.
 * No socket, no framing, no acknowledgements: nothing replay's writer could skip, so no
 * publish figure of replay can pass this one. Each combination is measured in turn,
 * interleaved over rounds (the disk's moods fall on all alike); medians are printed.
 *
 *   cc -O2 -o /tmp/sqlite_ceiling tools/sqlite_ceiling.c -lsqlite3
 *   /tmp/sqlite_ceiling [--events 300000] [--rounds 3] [--sync full|normal]
 *                       [--streams 1,8] [--batches 16,100,1000] [--migrations migrations]
 *                       [--folder /tmp]
 */
#include <dirent.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ceiling_common.h"

static void die(const char *what, sqlite3 *db) {
    fprintf(stderr, "sqlite_ceiling: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int is_sql(const struct dirent *entry) {
    size_t length = strlen(entry->d_name);
    return length > 4 && strcmp(entry->d_name + length - 4, ".sql") == 0;
}

/* The .sql files of `folder` in order, as one script. */
static char *read_schema(const char *folder) {
    struct dirent **entries;
    int count = scandir(folder, &entries, is_sql, by_name);
    if (count <= 0) {
        fprintf(stderr, "sqlite_ceiling: no .sql files in %s (--migrations)\n", folder);
        exit(1);
    }
    size_t size = 0, capacity = 1 << 16;
    char *schema = malloc(capacity);
    for (int i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, entries[i]->d_name);
        FILE *file = fopen(path, "rb");
        if (!file) die(path, NULL);
        size_t got;
        char buffer[8192];
        while ((got = fread(buffer, 1, sizeof buffer, file)) > 0) {
            while (size + got + 2 > capacity) schema = realloc(schema, capacity *= 2);
            memcpy(schema + size, buffer, got);
            size += got;
        }
        schema[size++] = '\n';
        fclose(file);
        free(entries[i]);
    }
    free(entries);
    schema[size] = 0;
    return schema;
}

static void exec(sqlite3 *db, const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "sqlite_ceiling: %s: %s\n", sql, error);
        exit(1);
    }
}

/* Events per second for `events` events over `streams` streams, `batch` per transaction. */
static double measure(const char *folder, const char *schema, const char *sync, long events, long streams, long batch) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ceiling-%d-%ld-%ld.sqlite", folder, (int)getpid(), streams, batch);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) die(path, db);
    exec(db, "PRAGMA journal_mode=WAL");
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA synchronous=%s", sync);
    exec(db, pragma);
    exec(db, schema);
    for (long s = 1; s <= streams; s++) {
        char insert[256];
        snprintf(insert, sizeof insert, "INSERT INTO streams (id, name, created_at) VALUES (%ld, 's%ld', '2026-11-25T00:00:00.000Z')", s, s);
        exec(db, insert);
    }
    sqlite3_stmt *insert, *update;
    if (sqlite3_prepare_v2(db, "INSERT INTO event_log (key, time, payload) VALUES (?, ?, ?)", -1, &insert, NULL) != SQLITE_OK) die("prepare", db);
    if (sqlite3_prepare_v2(db,
            "UPDATE streams SET first_seq = ?, last_seq = ?, event_count = ?, byte_count = ?, terminal = NULL, terminal_message = NULL, "
            "terminal_at = NULL, last_time = ?, writer_seq = NULL, deleted_at = NULL WHERE id = ?",
            -1, &update, NULL) != SQLITE_OK)
        die("prepare", db);
    static const char payload[100] = {0};
    int64_t *last = calloc(streams + 1, sizeof *last);
    int64_t millis = 1795000000000;
    double start = seconds();
    long written = 0;
    while (written < events) {
        exec(db, "BEGIN IMMEDIATE");
        millis++;
        for (long i = 0; i < batch && written < events; i++, written++) {
            long stream = written % streams + 1;
            int64_t seq = ++last[stream];
            sqlite3_bind_int64(insert, 1, ((int64_t)stream << 40) | seq);
            sqlite3_bind_int64(insert, 2, millis);
            sqlite3_bind_blob(insert, 3, payload, sizeof payload, SQLITE_STATIC);
            if (sqlite3_step(insert) != SQLITE_DONE) die("insert", db);
            sqlite3_reset(insert);
        }
        long touched = batch < streams ? batch : streams;
        for (long t = 0; t < touched; t++) {
            long stream = (written - 1 - t) % streams + 1;
            sqlite3_bind_int64(update, 1, 1);
            sqlite3_bind_int64(update, 2, last[stream]);
            sqlite3_bind_int64(update, 3, last[stream]);
            sqlite3_bind_int64(update, 4, last[stream] * (int64_t)sizeof payload);
            sqlite3_bind_int64(update, 5, millis);
            sqlite3_bind_int64(update, 6, stream);
            if (sqlite3_step(update) != SQLITE_DONE) die("update", db);
            sqlite3_reset(update);
        }
        exec(db, "COMMIT");
    }
    double rate = events / (seconds() - start);
    sqlite3_finalize(insert);
    sqlite3_finalize(update);
    sqlite3_close(db);
    free(last);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char file[4200];
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        unlink(file);
    }
    return rate;
}

int main(int argc, char **argv) {
    long events = 300000, rounds = 3;
    const char *sync = "FULL", *migrations = "migrations", *folder = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    long streams[MAX_LIST] = {1, 8}, batches[MAX_LIST] = {16, 100, 1000};
    int stream_count = 2, batch_count = 3;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) {
            fprintf(stderr, "usage: see the comment at the top of tools/sqlite_ceiling.c\n");
            return 64;
        }
        if (!strcmp(argv[i], "--events")) events = atol(value);
        else if (!strcmp(argv[i], "--rounds")) rounds = atol(value);
        else if (!strcmp(argv[i], "--sync")) sync = !strcmp(value, "normal") ? "NORMAL" : !strcmp(value, "off") ? "OFF" : "FULL";
        else if (!strcmp(argv[i], "--streams")) stream_count = parse_list(value, streams);
        else if (!strcmp(argv[i], "--batches")) batch_count = parse_list(value, batches);
        else if (!strcmp(argv[i], "--migrations")) migrations = value;
        else if (!strcmp(argv[i], "--folder")) folder = value;
        else {
            fprintf(stderr, "sqlite_ceiling: unknown option %s\n", argv[i]);
            return 64;
        }
        i++;
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || events < 1) {
        fprintf(stderr, "sqlite_ceiling: --rounds 1...64 and --events above 0\n");
        return 64;
    }
    char *schema = read_schema(migrations);
    static double results[MAX_LIST][MAX_LIST][MAX_ROUNDS];
    for (long round = 0; round < rounds; round++)
        for (int b = 0; b < batch_count; b++)
            for (int s = 0; s < stream_count; s++) results[s][b][round] = measure(folder, schema, sync, events, streams[s], batches[b]);
    printf("SQLite %s, WAL, synchronous=%s, 100-byte events, median of %ld interleaved rounds (events/s)\n", sqlite3_libversion(), sync, rounds);
    print_medians("streams", streams, stream_count, batches, batch_count, results, rounds);
    free(schema);
    return 0;
}

/*
 * Replay's SQLite layout as tools/sqlite_ceiling.c, tools/http_ceiling.c and
 * tools/workqueue_ceiling.c write it: a fresh database made by the .sql files of
 * migrations/, WAL, the given synchronous mode, and the two statements replay's writer
 * runs for each transaction (the INSERT of each event into event_log, keyed
 * (stream id << 40) | seq, and the UPDATE of each touched stream's row). Its WAL is as
 * replay keeps it: checkpointed at 4,000 pages, in a file zero-filled ahead.
 */
#ifndef SQLITE_LAYOUT_H
#define SQLITE_LAYOUT_H

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tool's name, for its error messages. */
static const char *layout_tool = "ceiling";

static void die(const char *what, sqlite3 *db) {
    fprintf(stderr, "%s: %s: %s\n", layout_tool, what, db ? sqlite3_errmsg(db) : "");
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
        fprintf(stderr, "%s: no .sql files in %s (--migrations)\n", layout_tool, folder);
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
        fprintf(stderr, "%s: %s: %s\n", layout_tool, sql, error);
        exit(1);
    }
}

/* As replay's WALFile: the WAL zero-filled to 5,000 frames of 4 KiB pages and made durable,
   so that commits rewrite it in place from the first, and do not extend it. */
static void reserve_wal(const char *path) {
    size_t length = strlen(path) + sizeof "-wal";
    char *wal = malloc(length);
    snprintf(wal, length, "%s-wal", path);
    int fd = open(wal, O_WRONLY);
    if (fd < 0) { perror(wal); exit(1); }
    const off_t size = 32 + (off_t)5000 * (24 + 4096);
    static char zeros[1 << 20];
    for (off_t offset = lseek(fd, 0, SEEK_END); offset < size;) {
        size_t count = size - offset < (off_t)sizeof zeros ? (size_t)(size - offset) : sizeof zeros;
        ssize_t written = pwrite(fd, zeros, count, offset);
        if (written <= 0) { perror(wal); exit(1); }
        offset += written;
    }
    fdatasync(fd);
    close(fd);
    free(wal);
}

/* A fresh database at `path` with `streams` streams (ids 1...streams), and its two statements. */
static sqlite3 *open_layout(const char *path, const char *schema, const char *sync, long streams, sqlite3_stmt **insert,
                            sqlite3_stmt **update) {
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) die(path, db);
    exec(db, "PRAGMA journal_mode=WAL");
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA synchronous=%s", sync);
    exec(db, pragma);
    /* As replay's writer (SQLiteLog.checkpointPages): checkpoints every 4,000 pages of WAL, not
       SQLite's 1,000, so the ceilings pay for checkpoints as replay does. */
    exec(db, "PRAGMA wal_autocheckpoint=4000");
    exec(db, schema);
    for (long s = 1; s <= streams; s++) {
        char row[256];
        snprintf(row, sizeof row, "INSERT INTO streams (id, name, created_at) VALUES (%ld, 's%ld', '2026-11-25T00:00:00.000Z')", s, s);
        exec(db, row);
    }
    reserve_wal(path);
    if (sqlite3_prepare_v2(db, "INSERT INTO event_log (key, time, payload) VALUES (?, ?, ?)", -1, insert, NULL) != SQLITE_OK) die("prepare", db);
    if (sqlite3_prepare_v2(db,
            "UPDATE streams SET first_seq = ?, last_seq = ?, event_count = ?, byte_count = ?, terminal = NULL, terminal_message = NULL, "
            "terminal_at = NULL, last_time = ?, writer_seq = NULL, deleted_at = NULL WHERE id = ?",
            -1, update, NULL) != SQLITE_OK)
        die("prepare", db);
    return db;
}

static inline void append_event(sqlite3 *db, sqlite3_stmt *insert, long stream, int64_t seq, int64_t millis, const void *payload, int length) {
    sqlite3_bind_int64(insert, 1, ((int64_t)stream << 40) | seq);
    sqlite3_bind_int64(insert, 2, millis);
    sqlite3_bind_blob(insert, 3, payload, length, SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE) die("insert", db);
    sqlite3_reset(insert);
}

static void update_stream(sqlite3 *db, sqlite3_stmt *update, long stream, int64_t last, int64_t bytes, int64_t millis) {
    sqlite3_bind_int64(update, 1, 1);
    sqlite3_bind_int64(update, 2, last);
    sqlite3_bind_int64(update, 3, last);
    sqlite3_bind_int64(update, 4, bytes);
    sqlite3_bind_int64(update, 5, millis);
    sqlite3_bind_int64(update, 6, stream);
    if (sqlite3_step(update) != SQLITE_DONE) die("update", db);
    sqlite3_reset(update);
}

/* Closes `db` and removes its files. */
static void remove_layout(sqlite3 *db, const char *path, sqlite3_stmt *insert, sqlite3_stmt *update) {
    sqlite3_finalize(insert);
    sqlite3_finalize(update);
    sqlite3_close(db);
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char file[4200];
        snprintf(file, sizeof file, "%s%s", path, suffixes[i]);
        unlink(file);
    }
}

#endif

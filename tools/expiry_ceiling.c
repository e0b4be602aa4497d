/*
 * What SQLite itself does to replay's writer when events expire as fast as they come,
 * measured from C: how many commits take over 10 ms with nothing of replay in the way.
 *
 * Replay's layout (tools/sqlite_layout.h: the tables of migrations/, WAL, synchronous FULL,
 * the WAL file zero-filled ahead), one stream, one thread as replay's one writer: every
 * loop commits the events due by then at RATE a second (the INSERTs and the stream's row,
 * one transaction), and, once events are TTL seconds old, removes the oldest ones that
 * have expired, at most 1,024 per transaction of their own, as replay's retention pass
 * does. Each commit is timed from its BEGIN to the end of its COMMIT, which includes the
 * checkpoint when the commit fills the WAL to the size given (a WAL hook that runs a
 * PASSIVE checkpoint, as SQLite's automatic one and replay's do, timed on its own); each
 * size of --checkpoint is one run of SECONDS on a fresh database. Each event's row is as
 * replay's: its payload, a 32-byte hash, and its expiry time in the expiry index.
 *
 *   cc -O2 -o /tmp/expiry_ceiling tools/expiry_ceiling.c -lsqlite3
 *   /tmp/expiry_ceiling [--rate 100000] [--seconds 20] [--ttl 2] [--checkpoint 4000,1000,250]
 *                       [--gap-us 0] [--migrations migrations] [--folder /tmp]
 *
 * --ttl 0 removes nothing. --gap-us N starts a commit no sooner than N µs after the last
 * one began, so that its batch is as large as replay's group commit makes it at that rate
 * (about 2,000 commits a second at 100,000 events: --gap-us 500); a checkpoint's time is
 * the distinct pages it copies, and smaller, more frequent commits rewrite more of the same
 * pages.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ceiling_common.h"
#include "sqlite_layout.h"

/* The checkpoints of the run under way. */
static long checkpoint_at, checkpoints, checkpointed_frames;
static double checkpoint_seconds, checkpoint_max;

static int checkpoint_hook(void *context, sqlite3 *db, const char *name, int frames) {
    (void)context;
    if (frames < checkpoint_at) return SQLITE_OK;
    double began = seconds();
    int log = 0, copied = 0;
    if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) != SQLITE_OK || copied == 0) return SQLITE_OK;
    double took = seconds() - began;
    checkpoints++;
    checkpointed_frames += copied;
    checkpoint_seconds += took;
    if (took > checkpoint_max) checkpoint_max = took;
    return SQLITE_OK;
}

static int compare_longs(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Every commit's time, in µs. */
struct timings {
    long *micros, count, capacity, over10, over25;
};

/* Ends the transaction begun at `began` as replay's writer does (the stream's row, then
   COMMIT, which runs the checkpoint when it is due), and records its time. */
static void commit(sqlite3 *db, sqlite3_stmt *update, int64_t first, int64_t last, double now, double began, struct timings *t) {
    update_stream(db, update, 1, last, 100 * (last - first + 1), (int64_t)(now * 1000));
    exec(db, "COMMIT");
    long took = (long)((seconds() - began) * 1e6);
    if (t->count == t->capacity) t->micros = realloc(t->micros, (t->capacity = t->capacity ? 2 * t->capacity : 1 << 20) * sizeof *t->micros);
    t->micros[t->count++] = took;
    t->over10 += took > 10000;
    t->over25 += took > 25000;
}

static void run(const char *folder, const char *schema, long rate, long duration, long ttl, long checkpoint, long gap) {
    char path[4096];
    snprintf(path, sizeof path, "%s/expiry-ceiling-%d-%ld.sqlite", folder, (int)getpid(), checkpoint);
    sqlite3_stmt *insert, *update, *delete;
    sqlite3 *db = open_layout(path, schema, "FULL", 1, &insert, &update);
    checkpoint_at = checkpoint;
    checkpoints = checkpointed_frames = 0;
    checkpoint_seconds = checkpoint_max = 0;
    sqlite3_wal_hook(db, checkpoint_hook, NULL); /* in place of SQLite's automatic checkpoint */
    if (sqlite3_prepare_v2(db, "DELETE FROM event_log WHERE key >= ? AND key < ?", -1, &delete, NULL) != SQLITE_OK) die("prepare", db);
    sqlite3_finalize(insert);
    if (sqlite3_prepare_v2(db, "INSERT INTO event_log (key, time, payload, hash, expires_at) VALUES (?, ?, ?, ?, ?)", -1, &insert, NULL) != SQLITE_OK)
        die("prepare", db);
    unsigned char hash[32];

    static const char payload[100] = {0};
    const long total = rate * duration;
    struct timings t = {0};
    int64_t last = 0, first = 1;
    double start = seconds(), last_began = -1;
    for (;;) {
        double now = seconds() - start;
        if (gap > 0 && now - last_began < gap / 1e6) {
            nanosleep(&(struct timespec){0, 50000}, NULL);
            continue;
        }
        int64_t due = (int64_t)(now * rate);
        if (due > total) due = total;
        int64_t expired = ttl > 0 ? (int64_t)((now - ttl) * rate) : 0;
        if (expired > last) expired = last;
        int wrote = 0;
        if (due > last) {
            double began = seconds();
            last_began = began - start;
            exec(db, "BEGIN IMMEDIATE");
            while (last < due) {
                int64_t millis = (int64_t)(now * 1000);
                ++last;
                for (int b = 0; b < 32; b++) hash[b] = (unsigned char)(last * 2654435761u >> (b % 4 * 8)) ^ (unsigned char)b;
                sqlite3_bind_int64(insert, 1, ((int64_t)1 << 40) | last);
                sqlite3_bind_int64(insert, 2, millis);
                sqlite3_bind_blob(insert, 3, payload, sizeof payload, SQLITE_STATIC);
                sqlite3_bind_blob(insert, 4, hash, sizeof hash, SQLITE_TRANSIENT);
                if (ttl > 0) sqlite3_bind_int64(insert, 5, millis + ttl * 1000);
                else sqlite3_bind_null(insert, 5);
                if (sqlite3_step(insert) != SQLITE_DONE) die("insert", db);
                sqlite3_reset(insert);
            }
            commit(db, update, first, last, now, began, &t);
            wrote = 1;
        }
        if (expired >= first) {
            int64_t end = expired + 1 - first > 1024 ? first + 1024 : expired + 1;
            double began = seconds();
            exec(db, "BEGIN IMMEDIATE");
            sqlite3_bind_int64(delete, 1, ((int64_t)1 << 40) | first);
            sqlite3_bind_int64(delete, 2, ((int64_t)1 << 40) | end);
            if (sqlite3_step(delete) != SQLITE_DONE) die("delete", db);
            sqlite3_reset(delete);
            first = end;
            commit(db, update, first, last, now, began, &t);
            wrote = 1;
        }
        if (last == total && (ttl == 0 || first > last)) break;
        if (!wrote) nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    double elapsed = seconds() - start;
    qsort(t.micros, t.count, sizeof *t.micros, compare_longs);
    printf("checkpoint %5ld pages, ttl %lds, gap %ld us: %ld events in %.1f s, %ld commits; p50 %ld us, p99 %ld us, max %ld us; %ld over 10 ms, %ld over 25 ms\n",
           checkpoint, ttl, gap, total, elapsed, t.count, t.micros[t.count / 2], t.micros[t.count * 99 / 100], t.micros[t.count - 1], t.over10, t.over25);
    if (checkpoints > 0)
        printf("  %ld checkpoints of %ld frames, %.2f ms each (%.2f us a frame), max %.2f ms\n", checkpoints, checkpointed_frames / checkpoints,
               checkpoint_seconds * 1000 / checkpoints, checkpoint_seconds * 1e6 / checkpointed_frames, checkpoint_max * 1000);
    fflush(stdout);
    free(t.micros);
    sqlite3_finalize(delete);
    remove_layout(db, path, insert, update);
}

int main(int argc, char **argv) {
    layout_tool = "expiry_ceiling";
    long rate = 100000, duration = 20, ttl = 2, gap = 0, checkpoints[MAX_LIST] = {4000, 1000, 250};
    int checkpoint_count = 3;
    const char *migrations = "migrations", *folder = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rate")) rate = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) duration = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--ttl")) ttl = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--checkpoint")) checkpoint_count = parse_list(argv[i + 1], checkpoints);
        else if (!strcmp(argv[i], "--gap-us")) gap = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--migrations")) migrations = argv[i + 1];
        else if (!strcmp(argv[i], "--folder")) folder = argv[i + 1];
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    char *schema = read_schema(migrations);
    for (int c = 0; c < checkpoint_count; c++) run(folder, schema, rate, duration, ttl, checkpoints[c], gap);
    free(schema);
    return 0;
}

/*
 * Allocations SQLite itself makes per inserted row, by rows per INSERT statement: the floor
 * under a publish's allocations (docs/PERFORMANCE.md, "Allocations per event"). The table
 * and the statement are replay's `event_log` and its insert; each statement carries ROWS
 * rows, bound in place (SQLITE_STATIC), as the writer binds them. Run it with
 * tools/malloc_count.c preloaded: it prints the allocations counted over 200,000 rows.
 *
 *   cc -O2 -o /tmp/insert_allocations tools/insert_allocations.c -lsqlite3
 *   cc -O2 -shared -fPIC -o /tmp/malloc_count.so tools/malloc_count.c
 *   for rows in 1 8 32 64; do MALLOC_COUNT=/tmp/count LD_PRELOAD=/tmp/malloc_count.so /tmp/insert_allocations $rows; done
 */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long counted(void) {
  // malloc_count.c writes its running total to $MALLOC_COUNT on SIGUSR2.
  const char *path = getenv("MALLOC_COUNT");
  if (path == NULL) return -1;
  raise(SIGUSR2);
  FILE *file = fopen(path, "r");
  long total = -1;
  if (file != NULL && fscanf(file, "%ld", &total) != 1) total = -1;
  if (file != NULL) fclose(file);
  return total;
}

int main(int argc, char **argv) {
  int rows = argc > 1 ? atoi(argv[1]) : 1;
  const int total = 200000;
  if (rows < 1 || rows > 1000) {
    fprintf(stderr, "usage: insert_allocations [ROWS per statement, 1-1000]\n");
    return 2;
  }
  char path[] = "/tmp/insert_allocations.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  sqlite3 *db;
  if (sqlite3_open(path, &db) != SQLITE_OK) return 1;
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; CREATE TABLE event_log (key INTEGER PRIMARY KEY, time INTEGER NOT NULL, "
               "payload BLOB NOT NULL, stamp BLOB, hash BLOB, traceparent TEXT) STRICT;",
               0, 0, 0);
  size_t size = 80 + (size_t)rows * 22;
  char *sql = malloc(size);
  strcpy(sql, "INSERT INTO event_log (key, time, payload, stamp, hash, traceparent) VALUES ");
  for (int row = 0; row < rows; row++) strcat(sql, row ? ",(?,?,?,?,?,?)" : "(?,?,?,?,?,?)");
  sqlite3_stmt *insert;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &insert, 0) != SQLITE_OK) {
    fprintf(stderr, "%s\n", sqlite3_errmsg(db));
    return 1;
  }
  const char payload[] = "event 123456";
  unsigned char hash[32];
  memset(hash, 7, sizeof hash);
  sqlite3_exec(db, "BEGIN", 0, 0, 0);
  long before = counted();
  long long key = 0;
  for (int statement = 0; statement < total / rows; statement++) {
    for (int row = 0; row < rows; row++) {
      int column = row * 6;
      sqlite3_bind_int64(insert, column + 1, ++key);
      sqlite3_bind_int64(insert, column + 2, 1700000000000LL);
      sqlite3_bind_blob(insert, column + 3, payload, (int)strlen(payload), SQLITE_STATIC);
      sqlite3_bind_null(insert, column + 4);
      sqlite3_bind_blob(insert, column + 5, hash, sizeof hash, SQLITE_STATIC);
      sqlite3_bind_null(insert, column + 6);
    }
    if (sqlite3_step(insert) != SQLITE_DONE) {
      fprintf(stderr, "%s\n", sqlite3_errmsg(db));
      return 1;
    }
    sqlite3_reset(insert);
  }
  long after = counted();
  sqlite3_exec(db, "COMMIT", 0, 0, 0);
  printf("%d rows per statement: %ld allocations for %lld rows (%.3f per row)\n", rows, after - before, key,
         (double)(after - before) / (double)key);
  sqlite3_finalize(insert);
  sqlite3_close(db);
  unlink(path);
  return 0;
}

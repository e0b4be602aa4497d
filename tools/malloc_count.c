// Heap allocations made by a running replayd, counted: the number issue budgets are set in
// (allocations per published, delivered or acknowledged event, docs/PERFORMANCE.md).
//
// Preloaded, it counts every call that allocates (malloc, calloc, realloc of a new or
// larger block, posix_memalign, aligned_alloc, memalign), in every thread; on SIGUSR2 it
// writes the running total to the file $MALLOC_COUNT names, one number and a newline.
// A run's allocations are the difference of two totals, taken before and after it.
//
//   cc -O2 -shared -fPIC -o /tmp/malloc_count.so tools/malloc_count.c
//   MALLOC_COUNT=/tmp/count LD_PRELOAD=/tmp/malloc_count.so replayd … &
//   kill -USR2 <pid>; cat /tmp/count
//   tools/allocations.sh does all of it for each hot path.
//
// Written by hand: ordo-one's malloc-interposer counts only while the process itself asks
// it to (hook/unhook from Swift, in the process under test), and this counts a daemon that
// does not know it is measured.
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ulong allocations;

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) {
  count();
  return __libc_malloc(size);
}

void *calloc(size_t count_, size_t size) {
  count();
  return __libc_calloc(count_, size);
}

void *realloc(void *pointer, size_t size) {
  // A realloc that grows a block may move it: an allocation as far as a budget goes.
  if (pointer == NULL || size > 0) count();
  return __libc_realloc(pointer, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  count();
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == NULL) return 12;  // ENOMEM
  *out = pointer;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

// Async-signal-safe: a number written with write(2), no stdio.
static void report(int signal) {
  (void)signal;
  const char *path = getenv("MALLOC_COUNT");
  if (path == NULL) return;
  char text[32];
  int length = 0;
  unsigned long value = atomic_load_explicit(&allocations, memory_order_relaxed);
  char digits[24];
  int used = 0;
  do {
    digits[used++] = (char)('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (used > 0) text[length++] = digits[--used];
  text[length++] = '\n';
  int file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (file < 0) return;
  ssize_t written = write(file, text, (size_t)length);
  (void)written;
  close(file);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = report;
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &action, NULL);
}

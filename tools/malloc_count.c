// Heap allocations made by a running replayd, counted: the number issue budgets are set in
// (allocations per published, delivered or acknowledged event, docs/PERFORMANCE.md).
//
// Preloaded, it counts every call that allocates (malloc, calloc, realloc of a new or
// larger block, posix_memalign, aligned_alloc, memalign, valloc, pvalloc), in every thread; on
// SIGUSR2 it writes the running total to the file $MALLOC_COUNT names, one number and a
// newline. A run's allocations are the difference of two totals, taken before and after it.
//
// Each block comes from the allocator the process would have used without it, and is
// freed and measured by the same one: the C library's, or jemalloc's when the process links
// it (replayd does), through jemalloc's own names (mallocx, dallocx, ...), as its `malloc`
// and `free` are hidden behind these. A block of one allocator freed by the other would
// corrupt both. (jemalloc's C++ `operator new`, which does not go through `malloc`, is not
// counted; no hot path of replayd's is C++.)
//
// Written by hand: ordo-one's malloc-interposer counts only while the process itself asks
// it to (hook/unhook from Swift, in the process under test), and this counts a daemon that
// does not know it is measured.
#define _GNU_SOURCE
#include <dlfcn.h>
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
extern void __libc_free(void *);

// jemalloc's interface, present when the process links it (weak: absent otherwise).
extern void *mallocx(size_t, int) __attribute__((weak));
extern void *rallocx(void *, size_t, int) __attribute__((weak));
extern void dallocx(void *, int) __attribute__((weak));
extern size_t sallocx(const void *, int) __attribute__((weak));
#define JEMALLOC_ZERO 0x40                                  /* MALLOCX_ZERO */
#define JEMALLOC_ALIGN(a) ((int)__builtin_ctzl((size_t)(a))) /* MALLOCX_LG_ALIGN */

// The C library's own, looked up in it by name: the process's first `malloc_usable_size`
// may be jemalloc's (the C library has no __libc_ name for it).
static size_t (*libc_usable_size)(void *);

static atomic_ulong allocations;

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

static void *allocate(size_t size, int flags) {
  count();
  if (mallocx == NULL) {
    if (flags & JEMALLOC_ZERO) return __libc_calloc(1, size);
    return __libc_malloc(size);
  }
  return mallocx(size == 0 ? 1 : size, flags);  // mallocx takes no zero size
}

static void *allocate_aligned(size_t alignment, size_t size) {
  count();
  if (mallocx == NULL) return __libc_memalign(alignment, size);
  return mallocx(size == 0 ? 1 : size, JEMALLOC_ALIGN(alignment));
}

void *malloc(size_t size) { return allocate(size, 0); }

void *calloc(size_t count_, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count_, size, &total)) return NULL;
  return allocate(total, JEMALLOC_ZERO);
}

void free(void *pointer) {
  if (pointer == NULL) return;
  if (dallocx != NULL) {
    dallocx(pointer, 0);
  } else {
    __libc_free(pointer);
  }
}

void *realloc(void *pointer, size_t size) {
  if (pointer == NULL) return malloc(size);
  if (size == 0) {
    free(pointer);
    return NULL;
  }
  // A realloc that grows a block may move it: an allocation as far as a budget goes.
  count();
  if (rallocx == NULL) return __libc_realloc(pointer, size);
  return rallocx(pointer, size, 0);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  void *pointer = allocate_aligned(alignment, size);
  if (pointer == NULL) return 12;  // ENOMEM
  *out = pointer;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) { return allocate_aligned(alignment, size); }

void *memalign(size_t alignment, size_t size) { return allocate_aligned(alignment, size); }

void *valloc(size_t size) { return allocate_aligned((size_t)sysconf(_SC_PAGESIZE), size); }

void *pvalloc(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return allocate_aligned(page, (size + page - 1) / page * page);
}

size_t malloc_usable_size(void *pointer) {
  if (pointer == NULL) return 0;
  if (sallocx != NULL) return sallocx(pointer, 0);
  return libc_usable_size == NULL ? 0 : libc_usable_size(pointer);
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
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc != NULL) libc_usable_size = (size_t (*)(void *))dlsym(libc, "malloc_usable_size");
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = report;
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &action, NULL);
}

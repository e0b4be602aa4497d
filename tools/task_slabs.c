// The Swift task allocator's slabs each task holds, counted in a running replayd.
//
// A task's async frames live in slabs it mallocs and keeps until it ends, as many as its
// deepest call needed. An HTTP connection is one task, so a parked SSE reader holds the
// slabs of the deepest request it has served (docs/PERFORMANCE.md, the SSE tables). This
// library, preloaded, notes every malloc made by libswift_Concurrency on behalf of the
// current task; on SIGUSR2 it writes one line per task: the bytes of slabs it holds, then
// each slab's size.
//
//   cc -O2 -shared -fPIC -o /tmp/task_slabs.so tools/task_slabs.c -L/opt/swift/usr/lib/swift/linux -lswift_Concurrency
//   TASK_SLABS=/tmp/slabs LD_PRELOAD=/tmp/task_slabs.so replayd --http 127.0.0.1:8787 &
//   (hold some readers: tools/sse_readers.py 8787 $! 500 50 100 10) ; kill -USR2 <pid>
//   sort /tmp/slabs | uniq -c | sort -rn | head      # the commonest: the readers'
//
// Written by hand: it measures the Swift runtime itself, which no package reports.
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *swift_task_getCurrent(void) __attribute__((weak));

#define SLOTS (1u << 20)  // open addressing: far more slabs than any run holds
struct slab { void *address; void *task; size_t size; };
static struct slab slabs[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t runtimeStart, runtimeEnd;
static int ready;

static unsigned slot(void *address) { return ((uintptr_t)address >> 4) & (SLOTS - 1); }

static int findRuntime(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  if (!strstr(info->dlpi_name, "libswift_Concurrency")) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *header = &info->dlpi_phdr[i];
    if (header->p_type == PT_LOAD && (header->p_flags & PF_X)) {
      runtimeStart = info->dlpi_addr + header->p_vaddr;
      runtimeEnd = runtimeStart + header->p_memsz;
    }
  }
  return 0;
}

void *malloc(size_t size) {
  void *address = __libc_malloc(size);
  uintptr_t caller = (uintptr_t)__builtin_return_address(0);
  if (ready && address && caller >= runtimeStart && caller < runtimeEnd && swift_task_getCurrent) {
    void *task = swift_task_getCurrent();
    if (task) {
      pthread_mutex_lock(&lock);
      unsigned i = slot(address);
      while (slabs[i].address) i = (i + 1) & (SLOTS - 1);
      slabs[i] = (struct slab){address, task, size};
      pthread_mutex_unlock(&lock);
    }
  }
  return address;
}

void free(void *address) {
  if (address && ready) {
    pthread_mutex_lock(&lock);
    for (unsigned i = slot(address); slabs[i].address; i = (i + 1) & (SLOTS - 1)) {
      if (slabs[i].address != address) continue;
      // Remove, then move up the entries after it that probed past it.
      slabs[i].address = 0;
      for (unsigned j = (i + 1) & (SLOTS - 1); slabs[j].address; j = (j + 1) & (SLOTS - 1)) {
        unsigned home = slot(slabs[j].address);
        int between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (between) continue;
        slabs[i] = slabs[j];
        slabs[j].address = 0;
        i = j;
      }
      break;
    }
    pthread_mutex_unlock(&lock);
  }
  __libc_free(address);
}

static int byTask(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const struct slab *)a)->task, y = (uintptr_t)((const struct slab *)b)->task;
  return x < y ? -1 : x > y;
}

static void report(int signal) {
  (void)signal;
  static struct slab held[SLOTS];
  unsigned count = 0;
  pthread_mutex_lock(&lock);
  for (unsigned i = 0; i < SLOTS; i++)
    if (slabs[i].address) held[count++] = slabs[i];
  pthread_mutex_unlock(&lock);
  qsort(held, count, sizeof *held, byTask);
  const char *path = getenv("TASK_SLABS");
  FILE *out = fopen(path ? path : "/tmp/task_slabs.txt", "w");
  if (!out) return;
  for (unsigned i = 0; i < count;) {
    unsigned end = i;
    size_t total = 0;
    while (end < count && held[end].task == held[i].task) total += held[end++].size;
    fprintf(out, "%zu", total);
    for (unsigned k = i; k < end; k++) fprintf(out, " %zu", held[k].size);
    fprintf(out, "\n");
    i = end;
  }
  fclose(out);
}

__attribute__((constructor)) static void start(void) {
  dl_iterate_phdr(findRuntime, 0);
  signal(SIGUSR2, report);
  ready = 1;
}

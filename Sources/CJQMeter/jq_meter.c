// Counts the memory of a jq program's run exactly, per thread.
//
// jq 1.6 allocates with plain malloc and has no allocator hook, and the process's heap
// (mallinfo2) mixes every thread's allocations: a program was charged for what other
// threads allocated while it ran, and a busy machine could let one that grows run far past
// its limit before a watchdog thread looked. So the calls libjq and libonig (its regex
// library) make to malloc, calloc, realloc, strdup and free are pointed, in those two
// libraries' own relocation tables (their GOT), at wrappers that count the bytes per
// thread; nothing else in the process goes through them. A run halts at the allocation
// that takes it past its limit (jq_halt: the interpreter stops before its next
// instruction), so what it holds stays within about one allocation of the limit. No
// listed package meters a C library's allocations; the ELF walk below is the standard
// one (dl_iterate_phdr, the dynamic section, its relocations), as plthook and
// sanitizer runtimes do it.
#define _GNU_SOURCE
#include "jq_meter.h"

#include <elf.h>
#include <jq.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define REPLAY_JUMP_SLOT R_X86_64_JUMP_SLOT
#define REPLAY_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define REPLAY_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define REPLAY_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

// What jq holds on this thread, net of what it freed here, and the run charged for it.
// initial-exec: reading them never allocates (these are read inside malloc).
static __thread int64_t held __attribute__((tls_model("initial-exec")));
static __thread replay_jq_meter *running __attribute__((tls_model("initial-exec")));

static void charge(int64_t delta) {
    held += delta;
    replay_jq_meter *meter = running;
    if (meter == NULL) return;
    int64_t above = held - meter->baseline;
    if (above <= meter->peak) return;
    meter->peak = above;
    if (above > meter->limit) replay_jq_meter_halt(meter, REPLAY_JQ_PAST_MEMORY);
}

// The wrappers call the process's own malloc (glibc's, or a sanitizer's), which is what
// the slots held before.
static void *metered_malloc(size_t size) {
    void *block = malloc(size);
    if (block != NULL) charge((int64_t)malloc_usable_size(block));
    return block;
}

static void *metered_calloc(size_t count, size_t size) {
    void *block = calloc(count, size);
    if (block != NULL) charge((int64_t)malloc_usable_size(block));
    return block;
}

static void *metered_realloc(void *old, size_t size) {
    int64_t before = old != NULL ? (int64_t)malloc_usable_size(old) : 0;
    void *block = realloc(old, size);
    if (block != NULL) {
        charge((int64_t)malloc_usable_size(block) - before);
    } else if (size == 0) {
        charge(-before);  // realloc(p, 0) freed p
    }
    return block;
}

static char *metered_strdup(const char *text) {
    char *copy = strdup(text);
    if (copy != NULL) charge((int64_t)malloc_usable_size(copy));
    return copy;
}

static void metered_free(void *block) {
    if (block == NULL) return;
    charge(-(int64_t)malloc_usable_size(block));
    free(block);
}

static const struct {
    const char *name;
    void *wrapper;
} wrappers[] = {
    {"malloc", (void *)metered_malloc}, {"calloc", (void *)metered_calloc}, {"realloc", (void *)metered_realloc},
    {"strdup", (void *)metered_strdup}, {"free", (void *)metered_free},
};

static void *wrapper_for(const char *name) {
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
        if (strcmp(name, wrappers[i].name) == 0) return wrappers[i].wrapper;
    }
    return NULL;
}

/// Libraries whose slots were pointed at the wrappers (libjq must be one of them).
static int patched_jq;

/// A dynamic-section pointer: glibc relocates them in place where the section is
/// writable, and leaves them as offsets where it is not.
static uintptr_t dynamic_address(uintptr_t value, uintptr_t base) {
    return value < base ? value + base : value;
}

static int patch_library(struct dl_phdr_info *info, size_t size, void *unused) {
    (void)size;
    (void)unused;
    const char *name = info->dlpi_name;
    int is_jq = name != NULL && strstr(name, "/libjq.so") != NULL;
    int is_onig = name != NULL && strstr(name, "/libonig.so") != NULL;
    if (!is_jq && !is_onig) return 0;
#if defined(REPLAY_JUMP_SLOT)
    uintptr_t base = info->dlpi_addr;
    const ElfW(Dyn) *dynamic = NULL;
    uintptr_t relro_start = 0, relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_DYNAMIC) dynamic = (const ElfW(Dyn) *)(base + header->p_vaddr);
        if (header->p_type == PT_GNU_RELRO) {
            relro_start = base + header->p_vaddr;
            relro_end = relro_start + header->p_memsz;
        }
    }
    if (dynamic == NULL) return 0;
    const ElfW(Sym) *symbols = NULL;
    const char *strings = NULL;
    const ElfW(Rela) *tables[2] = {NULL, NULL};
    size_t sizes[2] = {0, 0};
    int rela = 1;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_SYMTAB: symbols = (const ElfW(Sym) *)dynamic_address(entry->d_un.d_ptr, base); break;
        case DT_STRTAB: strings = (const char *)dynamic_address(entry->d_un.d_ptr, base); break;
        case DT_JMPREL: tables[0] = (const ElfW(Rela) *)dynamic_address(entry->d_un.d_ptr, base); break;
        case DT_PLTRELSZ: sizes[0] = entry->d_un.d_val; break;
        case DT_RELA: tables[1] = (const ElfW(Rela) *)dynamic_address(entry->d_un.d_ptr, base); break;
        case DT_RELASZ: sizes[1] = entry->d_un.d_val; break;
        case DT_PLTREL: rela = entry->d_un.d_val == DT_RELA; break;
        }
    }
    if (symbols == NULL || strings == NULL || !rela) return 0;
    long page = sysconf(_SC_PAGESIZE);
    int patched = 0;
    for (int t = 0; t < 2; t++) {
        if (tables[t] == NULL) continue;
        for (size_t i = 0; i < sizes[t] / sizeof(ElfW(Rela)); i++) {
            const ElfW(Rela) *relocation = &tables[t][i];
            unsigned long type = ELF64_R_TYPE(relocation->r_info);
            if (type != REPLAY_JUMP_SLOT && type != REPLAY_GLOB_DAT) continue;
            const ElfW(Sym) *symbol = &symbols[ELF64_R_SYM(relocation->r_info)];
            void *wrapper = wrapper_for(strings + symbol->st_name);
            if (wrapper == NULL) continue;
            void **slot = (void **)(base + relocation->r_offset);
            uintptr_t first = (uintptr_t)slot & ~(uintptr_t)(page - 1);
            // The slots of a library linked with -z now sit in its RELRO segment, read-only
            // once loaded: writable for the one store, then read-only again.
            if (mprotect((void *)first, (size_t)page, PROT_READ | PROT_WRITE) != 0) return 0;
            __atomic_store_n(slot, wrapper, __ATOMIC_RELEASE);
            if ((uintptr_t)slot >= relro_start && (uintptr_t)slot < relro_end) mprotect((void *)first, (size_t)page, PROT_READ);
            patched++;
        }
    }
    if (is_jq && patched > 0) patched_jq = 1;
#endif
    return 0;
}

static pthread_once_t installing = PTHREAD_ONCE_INIT;

static void install(void) {
    dl_iterate_phdr(patch_library, NULL);
}

_Bool replay_jq_meter_install(void) {
    pthread_once(&installing, install);
    return patched_jq != 0;
}

void replay_jq_meter_begin(replay_jq_meter *meter, void *state, int64_t limit) {
    meter->state = state;
    meter->limit = limit;
    meter->baseline = held;
    meter->peak = 0;
    atomic_store(&meter->breach, REPLAY_JQ_RUNNING);
    running = meter;
}

int replay_jq_meter_end(replay_jq_meter *meter) {
    running = NULL;
    return atomic_load(&meter->breach);
}

_Bool replay_jq_meter_halt(replay_jq_meter *meter, int reason) {
    int none = REPLAY_JQ_RUNNING;
    if (!atomic_compare_exchange_strong(&meter->breach, &none, reason)) return 0;
    // The one flag the interpreter reads before each instruction; jq_start clears it.
    jq_halt((jq_state *)meter->state, jv_null(), jv_null());
    return 1;
}

// jq's C library (Debian's libjq-dev, jq 1.6): the interpreter derived streams and
// read-time filters run their programs in.
#include <jv.h>
#include <jq.h>
// glibc's heap figures (mallinfo2): the watchdog's measure of a program's memory.
#include <malloc.h>
#include <stddef.h>

// Under ThreadSanitizer or AddressSanitizer, `malloc` is the sanitizer's allocator, whose
// memory glibc's figures never see: the watchdog would let a growing program take the
// machine. Their runtime counts what it has handed out; without one linked, the weak
// reference is null.
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

/// Bytes the process has allocated with `malloc` and not freed: the sanitizer's count
/// where one is linked, else glibc's (its arenas, and the mappings of their own).
static inline size_t replay_heap_bytes(void) {
    if (__sanitizer_get_current_allocated_bytes) return __sanitizer_get_current_allocated_bytes();
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

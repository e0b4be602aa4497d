// jemalloc (Debian's libjemalloc-dev), replayd's memory allocator: linked into the daemon,
// its malloc and free come before the C library's for the whole process (Sources/replayd/
// MemoryAllocator.swift says why). Only its control interface is declared here, to read
// its version and statistics: jemalloc.h would declare malloc and free a second time beside
// the C library's headers.
#include <stddef.h>

int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

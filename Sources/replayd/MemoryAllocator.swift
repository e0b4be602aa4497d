import CJemalloc

/// replayd's memory allocator is jemalloc, linked into the daemon in place of the C
/// library's malloc (as Redis links it), for every allocation of the process: Swift's
/// runtime, NIO, Foundation and SQLite alike.
///
/// Why: replay allocates on one thread and frees on another by design. A PUB's payload is
/// copied out of the read buffer on an event loop, and freed on the writer's thread when
/// the stream's tail ring lets it go; a commit's results are made on the writer and freed
/// on the loops. glibc's per-thread caches only help a thread that frees what it
/// allocates, so each such malloc went to an arena: in a profile of the bench's eight
/// pipelined publishers, the payload's two allocations were a third of what the event
/// loops spent routing a PUB. jemalloc's thread caches take frees from any thread: the
/// daemon spent 2–12 % less CPU an event publishing, 2–5 % an HTTP POST, for 5–9 MB more
/// at rest (docs/PERFORMANCE.md, "The memory allocator"). The start-up line names the
/// allocator in use.
enum MemoryAllocator {
    /// "jemalloc 5.3.0", or what serves malloc instead: an allocator preloaded before it
    /// (`LD_PRELOAD`) takes every allocation, and jemalloc's own count then stays near zero.
    static func describe() -> String {
        guard let version, let allocated = allocatedBytes else {
            return "the C library's (jemalloc's statistics cannot be read)"
        }
        // Start-up alone (the runtime, the arguments, the logger) allocates more than this.
        guard allocated >= 64 << 10 else {
            return "not jemalloc: it is linked, but another allocator was preloaded before it"
        }
        // "5.3.0-0-g54eaed1d…": the release, without the commit it was built from.
        return "jemalloc \(version.prefix { $0 != "-" })"
    }

    private static var version: String? {
        var pointer: UnsafePointer<CChar>?
        var size = MemoryLayout<UnsafePointer<CChar>?>.size
        guard mallctl("version", &pointer, &size, nil, 0) == 0, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// Bytes the application holds, as of now (jemalloc's statistics are refreshed by
    /// advancing its epoch).
    private static var allocatedBytes: Int? {
        var epoch: UInt64 = 1
        var newEpoch = epoch
        var epochSize = MemoryLayout<UInt64>.size
        guard mallctl("epoch", &epoch, &epochSize, &newEpoch, epochSize) == 0 else { return nil }
        var allocated = 0
        var size = MemoryLayout<Int>.size
        guard mallctl("stats.allocated", &allocated, &size, nil, 0) == 0 else { return nil }
        return allocated
    }
}

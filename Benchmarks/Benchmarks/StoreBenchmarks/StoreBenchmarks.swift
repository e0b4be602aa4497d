import Benchmark
import Foundation
import ReplayStore

/// The store's two hot paths: appends that arrive together (group commit, durability
/// full), and paged catch-up reads.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(10), maxIterations: 20)

    // 10,000 appends submitted at once, acknowledged after commit: measures events/s with
    // group commit at synchronous=FULL.
    Benchmark("10,000 appends submitted at once (group commit), durability full") { benchmark in
        let (store, cleanUp) = try temporaryStore(.full)
        defer { cleanUp() }
        let payload = Data(repeating: 0x61, count: 100)
        benchmark.startMeasurement()
        let done = DispatchGroup()
        for _ in 0..<10_000 {
            done.enter()
            store.append(payload, to: "bench") { _ in done.leave() }
        }
        done.wait()
        benchmark.stopMeasurement()
    }

    // One append at a time, each waiting for its own commit (one fsync per event).
    Benchmark("1,000 appends one at a time, durability full") { benchmark in
        let (store, cleanUp) = try temporaryStore(.full)
        defer { cleanUp() }
        let payload = Data(repeating: 0x61, count: 100)
        benchmark.startMeasurement()
        for _ in 0..<1_000 {
            let done = DispatchSemaphore(value: 0)
            store.append(payload, to: "bench") { _ in done.signal() }
            done.wait()
        }
        benchmark.stopMeasurement()
    }

    // Catch-up: 100,000 retained events read from the start in pages of 512.
    Benchmark("catch-up read of 100,000 events in pages of 512") { benchmark in
        let (store, cleanUp) = try temporaryStore(.normal)
        defer { cleanUp() }
        let payload = Data(repeating: 0x61, count: 100)
        let done = DispatchGroup()
        for _ in 0..<100_000 {
            done.enter()
            store.append(payload, to: "bench") { _ in done.leave() }
        }
        done.wait()
        benchmark.startMeasurement()
        var next: UInt64 = 1
        while true {
            let page = try store.read("bench", from: next, limit: 512)
            guard let last = page.last else { break }
            blackHole(page)
            next = last.sequence + 1
        }
        benchmark.stopMeasurement()
    }
}

/// A store in a fresh temp folder, and what closes and removes it.
func temporaryStore(_ durability: Durability) throws -> (EventStore, () -> Void) {
    let directory = NSTemporaryDirectory() + "/replay-bench-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let store = try EventStore(path: directory + "/bench.sqlite", options: .init(durability: durability, autoCreate: .unlimited))
    return (
        store,
        {
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    )
}

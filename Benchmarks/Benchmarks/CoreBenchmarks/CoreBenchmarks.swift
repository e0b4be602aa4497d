import Benchmark
import ReplayCore

/// The core's hot paths: fan-out of a subject and replay of a buffer to late subscribers.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(5))

    for subscribers in [1, 10, 100] {
        Benchmark("subject send to \(subscribers) subscribers", configuration: .init(scalingFactor: .kilo)) { benchmark in
            let subject = Subject<Int>()
            let sink = Sink()
            for _ in 0..<subscribers { subject.subscribe(next: { sink.take($0) }) }
            benchmark.startMeasurement()
            for n in benchmark.scaledIterations { subject.send(n) }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("replay 10k buffered values to a late subscriber", configuration: .init(scalingFactor: .one)) { benchmark in
        let subject = ReplaySubject<Int>(capacity: 10_000)
        for n in 0..<10_000 { subject.send(n) }
        let sink = Sink()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            subject.subscribe(next: { sink.take($0) }).dispose()
        }
        benchmark.stopMeasurement()
    }
}

/// Keeps the delivered values observable so the optimizer cannot drop the work.
final class Sink: Sendable {
    func take(_ value: Int) { blackHole(value) }
}

import NIOCore

/// Runs a task's jobs on a NIO event loop: the task that collects a prepared statement's
/// rows (`PinnedConnection.send`) then resumes where postgres-nio delivers them, on the
/// connection's event loop, and completes its promise there.
///
/// Without it the task resumed on the cooperative pool: the rows went from the event
/// loop to a pool thread, woken for them, and the promise back to the event loop, two
/// hand-offs between threads before the writer, waiting for the statement's answer,
/// could go on (a third of a millisecond of each batch on two busy cores, traced with
/// `perf trace`). swift-nio offers an event loop as a `SerialExecutor` for actors, not as
/// a `TaskExecutor` for a task's preference, hence this adapter.
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

import NIOCore

/// An event loop as a task executor: a task that prefers it runs its jobs on the loop's thread,
/// between the loop's I/O, instead of on the global concurrent executor. A payload's enrichment
/// started from a connection's handler then never leaves that connection's thread unless it
/// waits on work elsewhere (a fetch, a decoder helper, the blocking pool).
final class LoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

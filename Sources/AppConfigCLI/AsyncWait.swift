import Dispatch

/// Runs an async job on the concurrency pool and waits for its value: the commands are
/// synchronous (swift-argument-parser's `run`), their jobs async (`push`, `status`, rollouts).
/// Called from a thread of the pool, this blocks it: tests call commands on threads of their own.
func waitFor<T: Sendable>(_ job: @escaping @Sendable () async -> T) -> T {
    let box = WaitBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await job()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// The job's value, handed from the task to the waiting thread (the semaphore orders the two).
private final class WaitBox<T>: @unchecked Sendable { var value: T? }

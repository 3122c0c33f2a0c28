import AppConfigCore
import AppConfigOutput
import Foundation

/// Chunks finished in any order, handled in chunk order by a writer thread of their own: a worker
/// hands its finished chunk over and goes on rendering while the writer writes (a worker that
/// wrote the chunks itself held the others waiting on the lock for the whole write). Workers take chunks in increasing order, so only
/// a few chunks wait; when more than `limit` wait, a finishing worker waits for the writer (a slow
/// disk bounds memory, it does not grow it).
///
/// Handled chunks' buffers are kept (emptied) for the workers' next chunks: a chunk is about a
/// megabyte, and a fresh one per chunk was a fresh mapping to fault in, page by page.
///
/// The writer starts with the first chunk and ends at `close()` (every chunk handed over is
/// handled; its first error is thrown) or `abandon()` (a worker failed: chunks still waiting are
/// dropped and blocked workers are released).
final class OrderedChunks<State: Sendable>: @unchecked Sendable {
    typealias Handler = (inout State, [UInt8]) throws(Problem) -> Void

    private let condition = NSCondition()
    private let handle: Handler
    private let limit: Int
    // Guarded by `condition`.
    private var next = 0
    private var waiting: [Int: [UInt8]] = [:]
    private var spare: [[UInt8]] = []
    private var failure: Problem?
    private var ending = false
    /// The writer thread was started. The thread is not kept: it holds this object until its loop
    /// ends, and this object holding it was a cycle that leaked both (and the spare buffers) per run.
    private var writerStarted = false
    private var writerDone = false
    /// Touched by the writer only while it runs, by callers only after `close()`.
    private var state: State

    /// Chunks are zeroed once written (they may hold secrets).
    private let clearsChunks: Bool

    /// `handle` runs on the writer thread for each chunk in turn; `limit`: chunks that may wait.
    init(_ state: sending State, limit: Int = 8, clearsChunks: Bool = false, handle: @escaping Handler) {
        self.state = state
        self.limit = limit
        self.clearsChunks = clearsChunks
        self.handle = handle
    }

    /// Hands chunk `index` over, leaving `chunk` an empty buffer to fill next. Throws the writer's
    /// error once it has one.
    func finish(_ index: Int, _ chunk: inout [UInt8]) throws(Problem) {
        let bytes = chunk
        chunk = []
        condition.lock()
        defer { condition.unlock() }
        if let failure { throw failure }
        if !writerStarted && !ending {
            let thread = Thread { [self] in write() }
            thread.name = "appconfig-writer"
            writerStarted = true
            thread.start()
        }
        waiting[index] = bytes
        condition.broadcast()
        while waiting.count > limit && failure == nil && !ending { condition.wait() }
        if let failure { throw failure }
        chunk = spare.popLast() ?? []
    }

    /// The writer's loop: the next chunk when it is there, written outside the lock.
    private func write() {
        condition.lock()
        while true {
            while waiting[next] == nil && !ending && failure == nil { condition.wait() }
            guard failure == nil, var chunk = waiting.removeValue(forKey: next) else { break }
            condition.unlock()
            var written: Problem?
            do throws(Problem) { try handle(&state, chunk) } catch { written = error }
            // A chunk that may hold secrets (credential documents) is cleared, not only emptied.
            if clearsChunks { chunk.overwriteWithZeros() }
            chunk.removeAll(keepingCapacity: true)
            condition.lock()
            next += 1
            if let written { failure = written }
            if spare.count < limit { spare.append(chunk) }
            condition.broadcast()
        }
        waiting = [:]
        writerDone = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until the writer has handled every chunk handed over (in order, up to the first one
    /// missing) and throws its first error.
    func close() throws(Problem) {
        condition.lock()
        defer { condition.unlock() }
        ending = true
        condition.broadcast()
        while writerStarted && !writerDone { condition.wait() }
        if let failure { throw failure }
    }

    /// A worker failed: the writer stops after the chunk it is writing, waiting chunks are dropped
    /// and workers blocked in `finish` return.
    func abandon() {
        condition.lock()
        defer { condition.unlock() }
        if failure == nil { failure = Problem(.outputWrite, "the output was abandoned") }
        ending = true
        condition.broadcast()
        while writerStarted && !writerDone { condition.wait() }
    }

    /// The state, once every chunk is handled (after `close()`).
    func withState<R>(_ body: (inout State) throws(Problem) -> R) throws(Problem) -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body(&state)
    }
}

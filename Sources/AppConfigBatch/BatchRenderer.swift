import AppConfigBytes
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Dispatch
import Foundation
import Synchronization

/// Where the plists go.
public enum OutputTarget: Sendable, Equatable {
    /// A folder tree, published whole: a new generation folder beside it, then one atomic symlink switch.
    case directory(String)
    /// A tar archive, written under a temporary name and renamed when complete.
    case tar(String)
    /// A tar stream on standard output (no atomicity: the consumer sees it as it is written).
    case tarStdout
    /// `--dry-run`: resolve and check every device, write nothing.
    case none
}

public struct BatchOptions: Sendable {
    public var format: OutputFormat = .binary
    public var target: OutputTarget = .none
    public var jobs = ProcessInfo.processInfo.activeProcessorCount
    public var shard = Shard.whole
    /// Decode every output again with libplist and compare it with an independent evaluation.
    public var verify = false
    /// Generations kept beside a directory output: the current one and the one before (a reader
    /// still inside it is not pulled from under its feet).
    public var keepGenerations = 2
    /// More failed devices than this: nothing is published and the run fails.
    public var maxFailures: Int?

    public init() {}
}

/// One device that did not render, with what the report needs.
public struct DeviceFailure: Sendable {
    public var row: Int
    public var deviceKey: String
    public var error: DeviceError
}

public struct BatchResult: Sendable {
    public var devicesInShard = 0
    public var rendered = 0
    public var failures: [DeviceFailure] = []
    public var bytesWritten = 0
    public var renderSeconds = 0.0
    public var publishSeconds = 0.0
    public var interrupted = false
    /// True when the output was published (the generation switched, the tar renamed).
    public var published = false
    public var outputPath: String?
}

/// A batch run failed as a whole (the output could not be written): nothing was published.
public struct BatchError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Set from a signal handler; workers stop taking chunks when it is set.
public final class Cancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public func cancel() { flag.store(true, ordering: .relaxed) }
    public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

/// The fleet's hot loop: devices in chunks across `jobs` threads, one Renderer and one slot buffer
/// per thread, plists written straight from the renderer's buffer. Memory stays bounded: a
/// directory output writes each plist as it is made; a tar output renders a window of chunks in
/// parallel and writes them in device-key order before the next window.
public final class BatchRenderer: @unchecked Sendable {
    public let program: Program
    public let fleet: Fleet
    public let options: BatchOptions
    let image: ProgramImage
    let plan: Fleet.SlotPlan
    /// The rows of this shard (in device-key order for a tar).
    let rows: [Int32]
    /// Devices done so far (rendered or failed), for a progress display.
    public let progress = Atomic<Int>(0)
    static let chunkSize = 512

    public init(program: Program, fleet: Fleet, options: BatchOptions) throws {
        self.program = program
        self.fleet = fleet
        self.options = options
        image = ProgramImage(program)
        plan = try fleet.plan(for: program.slots)
        let inventory = fleet.inventory
        var rows: [Int32] = []
        rows.reserveCapacity(inventory.rowCount / options.shard.count + 1)
        for row in 0..<inventory.rowCount where options.shard.contains(hash: OutputNames.hash(inventory.value(row: row, slot: inventory.deviceKeySlot))) {
            rows.append(Int32(row))
        }
        switch options.target {
        case .tar, .tarStdout:
            let slot = inventory.deviceKeySlot
            rows.sort { a, b in
                inventory.value(row: Int(a), slot: slot).lexicographicallyPrecedes(inventory.value(row: Int(b), slot: slot))
            }
        default:
            break
        }
        self.rows = rows
    }

    public var deviceCount: Int { rows.count }

    public func run(cancellation: Cancellation = Cancellation()) throws -> BatchResult {
        switch options.target {
        case .directory(let path): return try renderToDirectory(path, cancellation: cancellation)
        case .tar(let path): return try renderToTar(path: path, cancellation: cancellation)
        case .tarStdout: return try renderToTar(path: nil, cancellation: cancellation)
        case .none: return try renderToNothing(cancellation: cancellation)
        }
    }

    // MARK: Rendering one device

    /// A worker's state: its renderer, its slot buffer, what went wrong. Used by one thread at a time.
    final class Worker: @unchecked Sendable {
        let renderer: Renderer
        let slots: UnsafeMutableBufferPointer<SlotValue>
        var failures: [DeviceFailure] = []
        var rendered = 0
        var bytes = 0
        let verifier: Verifier?

        init(image: ProgramImage, format: OutputFormat, verify: Bool) {
            renderer = Renderer(image: image, format: format)
            slots = .allocate(capacity: max(image.slotCount, 1))
            slots.initialize(repeating: .missing)
            verifier = verify ? Verifier(program: image.program, format: format) : nil
        }

        deinit { slots.deallocate() }
    }

    /// Renders one row; calls `emit` with the plist bytes, or records the failure.
    @inline(__always)
    func render(row: Int, worker: Worker, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        fleet.forEachValue(row: row, plan: plan) { slot, bytes in
            worker.slots[slot] = bytes.map { SlotValue(start: $0.baseAddress, count: $0.count) } ?? .missing
        }
        let view = UnsafeBufferPointer(worker.slots)
        do {
            let bytes = try worker.renderer.render(UnsafeBufferPointer(rebasing: view[0..<image.slotCount])) { [fleet] v in
                fleet.source(of: v, row: row)
            }
            if let verifier = worker.verifier, let mismatch = verifier.check(bytes, slots: view) {
                worker.failures.append(DeviceFailure(row: row, deviceKey: fleet.inventory.deviceKey(row), error: mismatch))
                return
            }
            try emit(bytes)
            worker.rendered += 1
            worker.bytes += bytes.count
        } catch let error as DeviceError {
            worker.failures.append(DeviceFailure(row: row, deviceKey: fleet.inventory.deviceKey(row), error: error))
        }
    }

    /// Runs `body(worker, chunk)` for every chunk across the threads until done or cancelled, then
    /// gathers the workers' results.
    private func forEachChunk(cancellation: Cancellation, chunks: Range<Int>,
                              _ body: @Sendable (Worker, Int) throws -> Void) throws -> [Worker] {
        let next = Atomic<Int>(chunks.lowerBound)
        let jobs = max(1, min(options.jobs, chunks.count))
        let workers = (0..<jobs).map { _ in Worker(image: image, format: options.format, verify: options.verify) }
        let firstError = Mutex<Error?>(nil)
        DispatchQueue.concurrentPerform(iterations: jobs) { w in
            let worker = workers[w]
            while !cancellation.isCancelled {
                let chunk = next.add(1, ordering: .relaxed).oldValue
                guard chunk < chunks.upperBound else { break }
                do {
                    try body(worker, chunk)
                } catch {
                    firstError.withLock { if $0 == nil { $0 = error } }
                    cancellation.cancel()
                    break
                }
            }
        }
        if let error = firstError.withLock({ $0 }) { throw error }
        return workers
    }

    private func chunkRows(_ chunk: Int) -> ArraySlice<Int32> {
        rows[(chunk * Self.chunkSize)..<min((chunk + 1) * Self.chunkSize, rows.count)]
    }

    private var chunkCount: Int { (rows.count + Self.chunkSize - 1) / Self.chunkSize }

    private func collect(_ workers: [Worker], into result: inout BatchResult) {
        result.devicesInShard = rows.count
        for w in workers {
            result.rendered += w.rendered
            result.failures += w.failures
            result.bytesWritten += w.bytes
        }
        result.failures.sort { $0.row < $1.row }
    }

    private func tooManyFailures(_ result: BatchResult) -> Bool {
        options.maxFailures.map { result.failures.count > $0 } ?? false
    }

    // MARK: Dry run

    private func renderToNothing(cancellation: Cancellation) throws -> BatchResult {
        var result = BatchResult()
        let start = monotonicSeconds()
        let workers = try forEachChunk(cancellation: cancellation, chunks: 0..<chunkCount) { worker, chunk in
            for row in self.chunkRows(chunk) { try self.render(row: Int(row), worker: worker) { _ in } }
            self.progress.add(self.chunkRows(chunk).count, ordering: .relaxed)
        }
        collect(workers, into: &result)
        result.renderSeconds = monotonicSeconds() - start
        result.interrupted = cancellation.isCancelled
        return result
    }

    // MARK: Directory output

    private func renderToDirectory(_ path: String, cancellation: Cancellation) throws -> BatchResult {
        let output = try GenerationFolder(path: path)
        var result = BatchResult()
        let start = monotonicSeconds()
        let workers: [Worker]
        do {
            workers = try forEachChunk(cancellation: cancellation, chunks: 0..<chunkCount) { worker, chunk in
                let inventory = self.fleet.inventory
                for row in self.chunkRows(chunk) {
                    try self.render(row: Int(row), worker: worker) { bytes in
                        let key = inventory.value(row: Int(row), slot: inventory.deviceKeySlot)
                        try output.write(bytes, to: OutputNames.relativePath(key))
                    }
                }
                self.progress.add(self.chunkRows(chunk).count, ordering: .relaxed)
            }
        } catch {
            output.discard()
            throw error
        }
        collect(workers, into: &result)
        result.renderSeconds = monotonicSeconds() - start
        result.interrupted = cancellation.isCancelled
        if result.interrupted || tooManyFailures(result) {
            output.discard()
            return result
        }
        let publishStart = monotonicSeconds()
        try output.publish(keep: options.keepGenerations)
        result.publishSeconds = monotonicSeconds() - publishStart
        result.published = true
        result.outputPath = path
        return result
    }

    // MARK: Tar output

    /// Renders windows of chunks in parallel into memory, then appends them in device-key order.
    private func renderToTar(path: String?, cancellation: Cancellation) throws -> BatchResult {
        let file = try path.map { try AtomicFile(path: $0) }
        let fd = file?.descriptor ?? 1
        var result = BatchResult()
        let start = monotonicSeconds()
        let window = max(1, options.jobs) * 4
        var chunk = 0
        var allWorkers: [Worker] = []
        do {
            while chunk < chunkCount && !cancellation.isCancelled {
                let range = chunk..<min(chunk + window, chunkCount)
                // Each chunk's members, written by the one worker that renders it, read after the join.
                let buffers = (0..<range.count).map { _ in ChunkOutput() }
                let workers = try forEachChunk(cancellation: cancellation, chunks: range) { worker, c in
                    var out: [UInt8] = []
                    out.reserveCapacity(Self.chunkSize * 1536)
                    var path: [UInt8] = []
                    let inventory = self.fleet.inventory
                    for row in self.chunkRows(c) {
                        try self.render(row: Int(row), worker: worker) { bytes in
                            path.removeAll(keepingCapacity: true)
                            OutputNames.appendRelativePath(inventory.value(row: Int(row), slot: inventory.deviceKeySlot), to: &path)
                            Tar.appendHeader(path: path[...], size: bytes.count, to: &out)
                            out += bytes
                            out += repeatElement(0, count: Tar.padding(for: bytes.count))
                        }
                    }
                    buffers[c - range.lowerBound].bytes = out
                    self.progress.add(self.chunkRows(c).count, ordering: .relaxed)
                }
                allWorkers += workers
                if cancellation.isCancelled { break }
                for b in buffers { try writeAll(fd, b.bytes) }
                chunk = range.upperBound
            }
            collect(allWorkers, into: &result)
            result.renderSeconds = monotonicSeconds() - start
            result.interrupted = cancellation.isCancelled
            if result.interrupted || tooManyFailures(result) {
                file?.discard()
                return result
            }
            try writeAll(fd, Tar.trailer)
            let publishStart = monotonicSeconds()
            try file?.commit()
            result.publishSeconds = monotonicSeconds() - publishStart
            result.published = true
            result.outputPath = path ?? "-"
            return result
        } catch {
            file?.discard()
            throw error
        }
    }
}

final class ChunkOutput: @unchecked Sendable {
    var bytes: [UInt8] = []
}

/// Writes all of `bytes` to a descriptor, through partial writes and EINTR.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { try writeAll(fd, $0) }
}

func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
    var done = 0
    while done < bytes.count {
        let n = write(fd, bytes.baseAddress! + done, bytes.count - done)
        if n < 0 {
            if errno == EINTR { continue }
            throw BatchError(message: "cannot write: \(String(cString: strerror(errno)))")
        }
        done += n
    }
}

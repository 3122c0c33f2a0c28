import AppConfigCore
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import Digest
import Dispatch
import Foundation
import Synchronization

/// How the fleet is rendered (where it goes is the sink's business).
public struct BatchOptions: Sendable {
    public var format: OutputFormat = .binary
    public var jobs = Parallelism.machine
    public var shard = Shard.whole
    /// Decode every output again with libplist and compare it with an independent evaluation.
    public var verify = false
    /// XML only: render each dictionary as a fragment this many tabs deep, for a sink that nests it
    /// in a larger plist (an MDM command); 0 renders whole plists.
    public var xmlNesting = 0
    /// A device whose configuration (or an extension's) is larger fails with
    /// `device.asset-too-large` (DDM: Apple's 1 MB limit for app config data).
    public var maxOutputBytes: Int?

    public init() {}
}

/// One device that did not render: its row and the problem (whose location names the device).
public struct DeviceFailure: Sendable {
    public var row: Int
    /// Every problem of the device (each failing key, each missing variable), in key order.
    public var problems: [Problem]
    /// The first of them.
    public var problem: Problem { problems[0] }

    public init(row: Int, problems: [Problem]) {
        precondition(!problems.isEmpty, "a failure has a problem")
        self.row = row
        self.problems = problems
    }
}

/// What a render pass did.
public struct BatchResult: Sendable {
    public var devicesInShard = 0
    public var rendered = 0
    /// The shard's rows in device-key order (the order they were rendered in).
    public var order: [Int32] = []
    /// By position in `order`: the SHA-256 of the device's output, nil when it failed.
    package var digests = DigestSlots(count: 0)
    /// By position in `order`: the device's entry in the previous manifest the night compared with
    /// (`BatchRenderer.run(comparedWith:)`), or -1; empty when there was none.
    public var previousEntries: [Int32] = []
    /// By position in `order`: the device's variant (`DeviceAssignments`); empty without assignments.
    public var variants: [UInt16] = []
    /// By position in `order`: the digest of the device's inputs (`InputDigest`); empty when they
    /// are not made (extensions, credentials).
    public var inputDigests: [UInt64] = []
    /// Devices whose inputs' digest was the previous manifest's: their output digest taken from it,
    /// not rendered (counted in `rendered`).
    public var carried = 0
    /// In row order.
    public var failures: [DeviceFailure] = []
    public var seconds = 0.0
    public var interrupted = false
}

/// Set from a signal handler; workers stop taking chunks when it is set.
public final class Cancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public func cancel() { flag.store(true, ordering: .relaxed) }
    public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

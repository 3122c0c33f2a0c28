import Dispatch
import Foundation
import Synchronization

/// Where the tests find the repository's fixtures, the shared public corpus and the built binary.
public enum Paths {
    /// The package root, from this file's place in Tests/TestSupport.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func fixture(_ relative: String) -> String { root.appendingPathComponent("Fixtures/\(relative)").path }

    /// `../shared/corpus` beside the checkout; nil in a user's clone, where corpus tests skip.
    public static let corpus: URL? = {
        let url = root.deletingLastPathComponent().appendingPathComponent("shared/corpus")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    public static var hasCorpus: Bool { corpus != nil }

    public static func corpusFile(_ relative: String) -> String? { corpus?.appendingPathComponent(relative).path }

    /// The `appconfig` executable that `swift build` put beside the test bundle.
    public static var appconfigBinary: String {
        let bundleDir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleDir, bundleDir.deletingLastPathComponent(), root.appendingPathComponent(".build/debug")] {
            let path = candidate.appendingPathComponent("appconfig").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return root.appendingPathComponent(".build/debug/appconfig").path
    }

    /// A fresh temporary directory, removed by the caller when done. `onDisk`: in the folder
    /// `APPCONFIG_TEST_DISK_DIR` names (tools/test keeps the usual temporary folder, a disk's, for
    /// what must be written to a disk while the rest goes to tmpfs), where it is set.
    public static func temporaryDirectory(onDisk: Bool = false) throws -> URL {
        let disk = onDisk ? ProcessInfo.processInfo.environment["APPCONFIG_TEST_DISK_DIR"].map { URL(fileURLWithPath: $0) } : nil
        let url = (disk ?? FileManager.default.temporaryDirectory).appendingPathComponent("appconfig-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs a program and captures its output (for the binary's end-to-end tests and the oracles).
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Runs a program and returns its standard output as bytes (for binary output such as a tar stream).
public func runProcessData(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let (data, errData) = readBoth(out, err)
    process.waitUntilExit()
    return (process.terminationStatus, data, String(decoding: errData, as: UTF8.self))
}

/// Runs a program to its end. `environment` replaces the inherited one where given.
public func runProcess(_ executable: String, _ arguments: [String], stdin: String? = nil,
                       environment: [String: String]? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let (outData, errData) = readBoth(out, err)
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus,
                         stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errData, as: UTF8.self))
}

/// Reads both pipes to their end at once (standard error on another thread): reading one to the
/// end first would deadlock with a child blocked writing to the other, full one.
public func readBoth(_ out: Pipe, _ err: Pipe) -> (Data, Data) {
    let errData = Mutex(Data())
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let d = err.fileHandleForReading.readDataToEndOfFile()
        errData.withLock { $0 = d }
        done.signal()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    done.wait()
    return (outData, errData.withLock { $0 })
}

/// Finds a program on PATH (python3, xmllint), or nil.
public func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// A report folder's `summary.json` as a dictionary.
public func reportSummary(_ report: String) throws -> [String: Any] {
    try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report + "/summary.json"))) as! [String: Any]
}

/// Runs a blocking call (a command whose async job it waits for) on a thread of its own and
/// awaits it: called on the concurrency pool's few threads, two such calls at once left no thread
/// for the jobs they waited on, and the test process hung.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.stackSize = 16 << 20
        thread.start()
    }
}

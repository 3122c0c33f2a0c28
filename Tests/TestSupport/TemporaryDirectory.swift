import Foundation

/// A fresh folder for one test, with its files named relative to it.
public struct TemporaryDirectory: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// A new folder; the caller removes it (`withTemporaryDirectory` does). `onDisk`: see
    /// `Paths.temporaryDirectory(onDisk:)`.
    public init(onDisk: Bool = false) throws { url = try Paths.temporaryDirectory(onDisk: onDisk) }

    /// The path of `name` inside the folder.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes `text` to `name` inside the folder and returns its path.
    @discardableResult
    public func write(_ text: String, to name: String) throws -> String {
        let file = path(name)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }
}

/// Runs `body` with a fresh temporary folder, removed when `body` returns or throws.
public func withTemporaryDirectory<R>(onDisk: Bool = false, _ body: (TemporaryDirectory) throws -> R) throws -> R {
    let dir = try TemporaryDirectory(onDisk: onDisk)
    defer { try? FileManager.default.removeItem(at: dir.url) }
    return try body(dir)
}

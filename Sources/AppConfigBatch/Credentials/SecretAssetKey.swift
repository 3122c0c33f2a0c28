import AppConfigCore
import AppConfigOutput
import Digest
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The key secret-bearing documents are named by: their file name, DataURL and token are an
/// HMAC-SHA256 of their bytes under it, not their SHA-256, which beside the user name in the same
/// device's plist would let anyone who reads `declarations.jsonl` test guesses of a password
/// offline. Kept beside the output (`OUT.secret-asset-key`, 0600, made on the first night and
/// read on every later one, so names stay stable from night to night), or given as a secret
/// (`--secret-asset-key SOURCE`: shards of one run share it). A dry run or a stream takes a key of
/// its own run.
struct SecretAssetKey: Sendable {
    private let padded: [UInt8]

    init(_ key: [UInt8]) {
        var k = key.count > 64 ? withUnsafeBytes(of: SHA256Digest(of: key)) { Array($0) } : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        padded = k
    }

    /// HMAC-SHA256 (RFC 2104) of `document`.
    func name(of document: [UInt8]) -> SHA256Digest {
        let inner = SHA256Digest(of: padded.map { $0 ^ 0x36 } + document)
        return SHA256Digest(of: padded.map { $0 ^ 0x5C } + withUnsafeBytes(of: inner) { Array($0) })
    }

    /// 32 random bytes.
    static func random() -> SecretAssetKey {
        var g = SystemRandomNumberGenerator()
        return SecretAssetKey((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &g) })
    }

    /// The key the job names (`source`), else the one kept beside its output, made there when
    /// missing.
    static func resolve(_ source: SecretSource?, output: RenderJob.Output, timeout: Double) throws(Problem) -> SecretAssetKey {
        if let source {
            let store = try SecretStore([source], timeout: timeout)
            defer { store.clear() }
            guard let value = store.value(source.name, key: nil) else { throw Problem(.secretSource, "--secret-asset-key: no value") }
            guard value.count >= 16 else { throw Problem(.secretSource, "--secret-asset-key: a key of at least 16 bytes") }
            return SecretAssetKey(Array(value))
        }
        return try output.sideFile(".secret-asset-key").map { p throws(Problem) in try kept(at: p) } ?? random()
    }

    /// The key file at `path`, made (0600, 32 random bytes as hex) when there is none. One that is
    /// a symlink, not the job's user's, or readable by others is refused.
    static func kept(at path: String) throws(Problem) -> SecretAssetKey {
        func refuse(_ why: String) -> Problem { Problem(.secretSource, at: Location(file: path), "the secret asset key \(path) \(why)") }
        var fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 && errno == ENOENT {
            let made = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if made >= 0 {
                var text: [UInt8] = []
                var g = SystemRandomNumberGenerator()
                for _ in 0..<32 { text += Array(String(format: "%02x", UInt8.random(in: .min ... .max, using: &g)).utf8) }
                text.append(0x0A)
                let written = text.withUnsafeBytes { write(made, $0.baseAddress, $0.count) }
                let synced = fsync(made)
                close(made)
                guard written == text.count, synced == 0 else {
                    unlink(path)
                    throw refuse("cannot be written: \(systemError())")
                }
            }
            fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard fd >= 0 else { throw refuse(errno == ELOOP ? "is a symlink" : "cannot be read: \(systemError())") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw refuse("is not a file") }
        guard info.st_uid == geteuid() else { throw refuse("belongs to user \(info.st_uid), not to the job's") }
        guard info.st_mode & 0o077 == 0 else { throw refuse("can be read by others (chmod 600)") }
        var bytes = [UInt8](repeating: 0, count: 256)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n >= 16 else { throw refuse("holds less than 16 bytes") }
        var key = Array(bytes[0..<n])
        while key.last == 0x0A || key.last == 0x0D { key.removeLast() }
        bytes.overwriteWithZeros()
        return SecretAssetKey(key)
    }
}

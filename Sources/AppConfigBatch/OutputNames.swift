import AppConfigBytes
import AppConfigSpec

/// Where a device's plist goes: `<folder>/<name>.plist`, the folder one of 4096 chosen by a hash of
/// the device key (no folder holds millions of files), the name the key made safe for any file
/// system: bytes outside `A-Z a-z 0-9 . _ -` become `%XX`, as does a leading `.`, so `/`, `..`,
/// control characters and newlines cannot appear and the mapping stays one to one. A key longer
/// than 90 bytes once encoded is cut and given a hash suffix.
public enum OutputNames {
    public static let folderCount = 4096
    static let maxNameLength = 90

    /// FNV-1a 64 of the device key: stable across runs, machines and shard counts.
    public static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 { fnv1a(key) }

    public static func folder(forHash h: UInt64) -> String {
        let f = String(Int(h % UInt64(folderCount)), radix: 16)
        return String(repeating: "0", count: 3 - f.count) + f
    }

    public static func safeName(_ key: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        appendSafeName(key, hash: hash(key), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    private static let lowerHex = Array("0123456789abcdef".utf8)

    static func appendSafeName(_ key: UnsafeBufferPointer<UInt8>, hash h: UInt64, to out: inout [UInt8]) {
        let start = out.count
        for (i, b) in key.enumerated() {
            let plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || (b == UInt8(ascii: ".") && i > 0)
            if plain { out.append(b) } else { out += [UInt8(ascii: "%"), hexDigits[Int(b >> 4)], hexDigits[Int(b & 0xF)]] }
        }
        if out.count - start > maxNameLength {
            let suffix = Array(String(h, radix: 16).utf8)
            out.removeSubrange((start + maxNameLength - 1 - suffix.count)...)
            out.append(UInt8(ascii: "~"))
            out += suffix
        }
    }

    /// Appends `folder/name.plist` for a key: the path of its plist in the output folder or the tar.
    public static func appendRelativePath(_ key: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let h = hash(key)
        let f = Int(h % UInt64(folderCount))
        out += [lowerHex[f >> 8], lowerHex[(f >> 4) & 0xF], lowerHex[f & 0xF], UInt8(ascii: "/")]
        appendSafeName(key, hash: h, to: &out)
        out += Array(".plist".utf8)
    }

    /// The path of a device's plist relative to the output folder (or inside the tar).
    public static func relativePath(_ key: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        appendRelativePath(key, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// `--shard I/N`: the devices whose key hashes to I modulo N. The same hash in every shard, so the
/// union of N shards is the single run.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    public static let whole = Shard(index: 0, count: 1)

    public init?(parsing text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, i >= 0, i < n else { return nil }
        self.init(index: i, count: n)
    }

    @inline(__always)
    public func contains(hash: UInt64) -> Bool { count == 1 || Int(hash % UInt64(count)) == index }

    public var description: String { "\(index)/\(count)" }

    /// The shard a scheduler gives through the environment: a Kubernetes Indexed Job
    /// (`JOB_COMPLETION_INDEX`, with `--shard-count`), a Slurm array (`SLURM_ARRAY_TASK_ID`,
    /// `SLURM_ARRAY_TASK_COUNT`), an AWS Batch array (`AWS_BATCH_JOB_ARRAY_INDEX`, with `--shard-count`).
    public static func fromEnvironment(_ env: [String: String], count: Int?) -> Result<Shard?, ShardError> {
        func make(_ indexName: String, _ index: String, _ n: Int?) -> Result<Shard?, ShardError> {
            guard let n else { return .failure(ShardError(message: "\(indexName) is set; give --shard-count N")) }
            guard let i = Int(index), i >= 0, i < n, n >= 1 else {
                return .failure(ShardError(message: "\(indexName)=\(index) is not a shard index below \(n)"))
            }
            return .success(Shard(index: i, count: n))
        }
        if let i = env["JOB_COMPLETION_INDEX"] { return make("JOB_COMPLETION_INDEX", i, count) }
        if let i = env["SLURM_ARRAY_TASK_ID"] {
            let n = count ?? env["SLURM_ARRAY_TASK_COUNT"].flatMap { Int($0) }
            // Slurm arrays may start at 1 (--array=1-N): SLURM_ARRAY_TASK_MIN says where.
            let offset = env["SLURM_ARRAY_TASK_MIN"].flatMap { Int($0) } ?? 0
            return make("SLURM_ARRAY_TASK_ID", String((Int(i) ?? -1) - offset), n)
        }
        if let i = env["AWS_BATCH_JOB_ARRAY_INDEX"] { return make("AWS_BATCH_JOB_ARRAY_INDEX", i, count) }
        return .success(nil)
    }

    public struct ShardError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}

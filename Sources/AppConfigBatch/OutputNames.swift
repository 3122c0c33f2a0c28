/// Where a device's plist goes: `<folder>/<name>.plist`, the folder one of 4096 chosen by a hash of
/// the device key (no folder holds millions of files), the name the key made safe for any file
/// system: bytes outside `A-Z a-z 0-9 . _ -` become `%XX`, as does a leading `.`, so `/`, `..`,
/// control characters and newlines cannot appear and the mapping stays one to one. A key longer
/// than 90 bytes once encoded is cut and given a hash suffix.
public enum OutputNames {
    public static let folderCount = 4096
    static let maxNameLength = 90

    /// FNV-1a 64 of the device key: stable across runs, machines and shard counts.
    public static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in key { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return h
    }

    public static func folder(forHash h: UInt64) -> String {
        let f = String(Int(h % UInt64(folderCount)), radix: 16)
        return String(repeating: "0", count: 3 - f.count) + f
    }

    public static func safeName(_ key: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(key.count + 6)
        let hexDigits = Array("0123456789ABCDEF".utf8)
        for (i, b) in key.enumerated() {
            let plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || (b == UInt8(ascii: ".") && i > 0)
            if plain { out.append(b) } else { out += [UInt8(ascii: "%"), hexDigits[Int(b >> 4)], hexDigits[Int(b & 0xF)]] }
        }
        if out.count > maxNameLength {
            let suffix = String(hash(key), radix: 16)
            out = Array(out[0..<(maxNameLength - 1 - suffix.count)]) + [UInt8(ascii: "~")] + Array(suffix.utf8)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The path of a device's plist relative to the output folder (or inside the tar).
    public static func relativePath(_ key: UnsafeBufferPointer<UInt8>) -> String {
        folder(forHash: hash(key)) + "/" + safeName(key) + ".plist"
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

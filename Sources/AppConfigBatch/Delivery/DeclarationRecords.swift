import AppConfigCore
import AppConfigOutput
import Digest

/// What the declarations of each device written tonight are made from, kept by position for the
/// generation's close: `declarations.jsonl` and `index.jsonl` are then written once, made from
/// these where they go (`DDMEncoding.closingLines`), instead of being written as devices come into
/// files of their own and copied into the archive at the end (1.5 GB at 1M devices, written twice:
/// most of what `--delivery ddm` cost beyond plists). 96 bytes a device (the stride of `Record`),
/// against the 1.5 KB of lines. Written by the workers at disjoint positions, read after they are joined.
/// Kept for a device with its app's data asset alone (no extension, no credential): what
/// `DDMEncoding.batching` digests in batches.
final class DeclarationRecords: @unchecked Sendable {
    /// The parts of a device's declarations that are not known elsewhere: its data asset's digest
    /// is in `DDMEncoding.assetsByPosition`, its set's in the run's digests, its variant in the run's.
    struct Record: BitwiseCopyable {
        /// The Identifier's and tokens' 128 bits (the first half of each digest: `identifierDigits`,
        /// `tokenDigits`).
        var identity: UInt128
        var configurationToken: UInt128
        var activationToken: UInt128
        /// The data asset's name: its Identifier (first half) and ServerToken (second).
        var assetName: SHA256Digest
        var assetSize: UInt32
        /// Its files and lines were written (not a dry run, not unchanged under `--changed-only`).
        var written: Bool
        /// Its asset's declaration is the first of that data in the generation: the line goes with it.
        var firstOfAsset: Bool
    }

    private let arena = BufferArena()
    private let slots: WorkerSlots<Record>
    let count: Int

    init(count: Int) {
        self.count = count
        let none = Record(identity: 0, configurationToken: 0, activationToken: 0, assetName: SHA256Digest(a: 0, b: 0, c: 0, d: 0),
                          assetSize: 0, written: false, firstOfAsset: false)
        slots = arena.slots(count: count, repeating: none)
    }

    /// The device at `position` was written with declarations `d`.
    @inline(__always)
    func set(_ position: Int, _ d: DeviceDeclarations) {
        let a = d.assets[0]
        slots[position] = Record(identity: Self.half(d.identity), configurationToken: Self.half(d.configurationToken),
                                 activationToken: Self.half(d.activationToken), assetName: a.name, assetSize: UInt32(a.size),
                                 written: true, firstOfAsset: false)
    }

    @inline(__always)
    func record(at position: Int) -> Record { slots[position] }

    /// Marks which written devices brought their asset first, from the writer's account
    /// (`DeviceSink.takeFirstShared`: per shared file it took, in order, whether it was new): each
    /// written device brought one, in position order. A count that does not match is an error, not
    /// a guess.
    func markFirstOfAsset(_ firsts: [Bool], output: String) throws(Problem) {
        var k = 0
        for p in 0..<count where slots[p].written {
            if k < firsts.count { slots[p].firstOfAsset = firsts[k] }
            k += 1
        }
        guard k == firsts.count else {
            throw Problem(OutputCode.outputWrite, at: Location(file: output),
                          "internal: \(k) devices written with \(firsts.count) assets taken: the declarations are not published")
        }
    }

    /// A digest's first 128 bits, as the Identifier or token shows them.
    @inline(__always)
    static func half(_ d: SHA256Digest) -> UInt128 { UInt128(d.a) | UInt128(d.b) << 64 }

    /// The digest an Identifier or token is written from, with its first 128 bits `half`.
    @inline(__always)
    static func digest(_ half: UInt128) -> SHA256Digest {
        SHA256Digest(a: UInt64(truncatingIfNeeded: half), b: UInt64(truncatingIfNeeded: half >> 64), c: 0, d: 0)
    }
}
